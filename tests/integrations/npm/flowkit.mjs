// What every JavaScript flow shares: the stores from FLOW_STORES ({name: {url, key}}), and one JSON
// line on standard output, what the flow saw per store (an error beside what it had seen so far).
export async function run(flow) {
  const out = {};
  for (const [name, store] of Object.entries(JSON.parse(process.env.FLOW_STORES))) {
    const seen = {};
    try {
      await flow(store.url, store.key, seen);
    } catch (error) {
      seen.error = `${error?.name}: ${String(error?.message ?? error).slice(0, 600)}`;
    }
    out[name] = seen;
  }
  console.log(JSON.stringify(out));
}

// read() again until done(value) holds or 20 s pass: what is added with inference is learnt in the background
export async function until(read, done, seconds = 20) {
  const deadline = Date.now() + seconds * 1000;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

export const results = (answer) => (Array.isArray(answer) ? answer : answer?.results ?? []);
export const texts = (answer) => results(answer).map((m) => m.memory).sort();
