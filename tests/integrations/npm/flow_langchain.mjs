// LangChain.js's Mem0Memory (@langchain/community 1.1.29, on mem0ai 2.4.6) pointed at this server:
// what a chain's memory saves and loads (the history, and what the input recalls), without a model.
import { Mem0Memory } from "@langchain/community/memory/mem0";
import { run, until } from "./flowkit.mjs";

await run(async (url, key, seen) => {
  const PORTAL = url, KEY = key;
  const memory = new Mem0Memory({ apiKey: KEY, sessionId: "ada", memoryOptions: { infer: false }, mem0Options: { host: PORTAL } });
  await memory.saveContext({ input: "I live in Lyon" }, { output: "Lyon is lovely." });
  await memory.saveContext({ input: "I love jazz" }, { output: "Noted." });
  const history = await until(() => memory.loadMemoryVariables({}), (v) => v.history.includes("jazz"));
  seen.history = ["I live in Lyon", "I love jazz"].filter((t) => history.history.includes(t));
  const recalled = await memory.loadMemoryVariables({ input: "Where do I live?" });
  seen.recalled = recalled.history.includes("I live in Lyon");
});
