// mem0's TypeScript client 2.4.6 (the one LangChain.js builds) pointed at this server: its typical flow
// with an agent, runs, metadata and filters, on its default (v1) reads.
import MemoryClient from "mem0ai";
import { run, texts, results, until } from "./flowkit.mjs";

await run(async (url, key, seen) => {
  const PORTAL = url, KEY = key;
  const memory = new MemoryClient({ apiKey: KEY, host: PORTAL });
  const scope = { user_id: "ada", agent_id: "travel-bot" };
  const added = await memory.add([{ role: "user", content: "I live in Lyon" }], { ...scope, run_id: "trip-1", metadata: { channel: "chat" }, infer: false });
  seen.add = results(added).map((m) => [m.memory, m.event]);
  await memory.add([{ role: "user", content: "I love jazz" }], { ...scope, run_id: "trip-2" });
  const listed = await until(() => memory.getAll({ user_id: "ada" }), (a) => Array.isArray(a) && a.length >= 2);
  seen.getAll = Array.isArray(listed) ? texts(listed) : listed;
  const hits = await memory.search("where does she live", { user_id: "ada", limit: 1 });
  seen.search = Array.isArray(hits) ? texts(hits) : hits;
  const v2 = await memory.search("jazz", { api_version: "v2", filters: { AND: [{ user_id: "ada" }, { run_id: "trip-2" }] } });
  seen.searchV2 = texts(v2);
  const lyon = results(listed).find((m) => m.memory === "I live in Lyon");
  const got = await memory.get(lyon.id);
  seen.get = [got.memory, got.agent_id, got.run_id, got.metadata];
  seen.update = (await memory.update(lyon.id, { text: "I live in Paris" })).memory;
  seen.history = (await memory.history(lyon.id)).map((e) => [e.event, e.old_memory, e.new_memory]);
  await memory.delete(lyon.id);
  await memory.deleteAll({ user_id: "ada", run_id: "trip-2" });
  seen.afterDeleteAll = texts(await memory.getAll({ user_id: "ada" }));
});
