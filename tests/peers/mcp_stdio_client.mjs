// The official MCP TypeScript SDK's StdioClientTransport launching `reagent mcp --url` (the
// stdio bridge to a running reagent's /mcp) as its server process.
// Usage: node mcp_stdio_client.mjs REAGENT_BIN BASE_URL KEY AGENT QUERY SLOW_QUERY. Lists the
// tools, calls AGENT with QUERY (with onprogress), then calls it with SLOW_QUERY (a run that does
// not end by itself): pings while it is in flight, aborts it (the SDK sends
// notifications/cancelled) and waits for the run to end. The key reaches the bridge only
// through the variable named by --key-env. Prints JSON like mcp_stdio_client.py.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [binary, base, key, agent, query, slow] = process.argv.slice(2);
const api = (path) =>
  fetch(new URL(path, base), { headers: { Authorization: `Bearer ${key}` } }).then((r) => r.json());
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
// `promise`, or an error after `ms`; the timer is cleared so that it does not hold the process.
async function within(ms, what, promise) {
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer in ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

async function activeRun() {
  for (;;) {
    const page = await api("/api/conversations");
    const busy = page.items.find((c) => c.active_run_id);
    if (busy) return busy.active_run_id;
    await sleep(50);
  }
}

async function statusAfter(runId) {
  for (;;) {
    const { status } = await api(`/api/runs/${runId}`);
    if (status !== "queued" && status !== "running") return status;
    await sleep(50);
  }
}

const transport = new StdioClientTransport({
  command: binary,
  args: ["mcp", "--url", base, "--key-env", "REAGENT_TEST_KEY"],
  // RUST_LOG passes through so that a failing test can show what the bridge relayed.
  env: { REAGENT_TEST_KEY: key, ...(process.env.RUST_LOG ? { RUST_LOG: process.env.RUST_LOG } : {}) },
});
const client = new Client({ name: "reagent-stdio-test", version: "1.0.0" });
await client.connect(transport);
const tools = await client.listTools();
const progress = [];
const result = await client.callTool({ name: agent, arguments: { query } }, undefined, {
  onprogress: (p) => progress.push({ progress: p.progress, message: p.message }),
});

const abort = new AbortController();
const slowCall = client
  .callTool({ name: agent, arguments: { query: slow } }, undefined, { signal: abort.signal })
  .catch((e) => e);
const runId = await within(20000, "the slow run", activeRun());
const started = performance.now();
await within(10000, "ping during a call", client.ping());
const pingMs = performance.now() - started;
abort.abort("the test cancels");
await slowCall;
const slowStatus = await within(20000, "the cancelled run's end", statusAfter(runId));
await client.close();

console.log(JSON.stringify({
  tools: tools.tools.map((t) => t.name),
  text: result.content.filter((c) => c.type === "text").map((c) => c.text).join(""),
  structured: result.structuredContent ?? null,
  is_error: result.isError ?? false,
  progress,
  ping_during_call_s: pingMs / 1000,
  slow_run_status: slowStatus,
}));
