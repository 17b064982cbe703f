// Loaded before a README block the tests run (NODE_OPTIONS=--import=./telemetry-spy.mjs), as the
// measure of what mem0's client tells PostHog: its TypeScript client reports with fetch. Each such
// call is written on standard error ("telemetry: <address>") and answered here, never sent.
const sent = globalThis.fetch;
globalThis.fetch = async (url, init) => {
  if (new URL(String(url)).hostname.endsWith("posthog.com")) {
    process.stderr.write(`telemetry: ${url}\n`);
    return new Response("{}", { status: 200, headers: { "Content-Type": "application/json" } });
  }
  return sent(url, init);
};
