// Loaded before every flow here (node --import=./loopback-only.mjs): nothing may leave the machine.
// A fetch to any host but loopback (mem0's telemetry, a default host) is written on standard error
// ("blocked: <address>"), which fails the test, and is refused, never sent.
const sent = globalThis.fetch;
globalThis.fetch = async (url, init) => {
  const host = new URL(String(url instanceof Request ? url.url : url)).hostname;
  if (host !== "127.0.0.1" && host !== "localhost") {
    process.stderr.write(`blocked: ${url}\n`);
    throw new TypeError(`blocked: ${host}`);
  }
  return sent(url, init);
};
