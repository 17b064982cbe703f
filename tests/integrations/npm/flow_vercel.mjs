// @mem0/vercel-ai-provider 3.0.2 and 2.0.6 pointed at this server: the memory helpers an AI SDK app
// calls around its model (add, then retrieve, get and search by person and metadata), without a model.
import * as v3 from "@mem0/vercel-ai-provider";
import * as v2 from "mem0-vercel-ai-provider-2";
import { run, until } from "./flowkit.mjs";

const said = (text) => [{ role: "user", content: [{ type: "text", text }] }];

await run(async (url, key, seen) => {
  const PORTAL = url, KEY = key;
  for (const [name, provider] of [["v3", v3], ["v2", v2]]) {
    const config = { mem0ApiKey: KEY, host: PORTAL, user_id: "ada" };   // every helper's last argument
    const mem0 = { ...config, user_id: `ada-${name}` };  // a person per version
    await provider.addMemories(said("I live in Lyon"), { ...mem0, metadata: { channel: "chat" } });
    const got = await until(() => provider.getMemories("Where do I live?", mem0).catch((e) => String(e)),
                            (m) => Array.isArray(m) && m.length >= 1);
    seen[`${name}.getMemories`] = Array.isArray(got) ? got.map((m) => m.memory) : got;
    const retrieved = await provider.retrieveMemories("Where do I live?", mem0);
    seen[`${name}.retrieveMemories`] = retrieved.includes("I live in Lyon");
    const searched = await provider.searchMemories("Where do I live?", { ...mem0, metadata: { channel: "chat" } });
    seen[`${name}.searchMemories`] = (searched.results ?? searched).map((m) => m.memory);
  }
});
