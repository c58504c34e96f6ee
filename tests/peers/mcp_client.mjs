// The official MCP TypeScript SDK client calling reagent's agents over /mcp (streamable HTTP).
// Usage: node mcp_client.mjs URL KEY AGENT QUERY. Prints JSON: the tool names listed, the call's
// text, structuredContent, isError and the progress notifications it received.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, key, agent, query] = process.argv.slice(2);
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${key}` } },
});
const client = new Client({ name: "reagent-test", version: "1.0.0" });
await client.connect(transport);
const tools = await client.listTools();
const progress = [];
const result = await client.callTool({ name: agent, arguments: { query } }, undefined, {
  onprogress: (p) => progress.push({ progress: p.progress, message: p.message }),
});
await client.close();
console.log(JSON.stringify({
  protocol_version: transport.protocolVersion ?? null,
  tools: tools.tools.map((t) => t.name),
  text: result.content.filter((c) => c.type === "text").map((c) => c.text).join(""),
  structured: result.structuredContent ?? null,
  is_error: result.isError ?? false,
  progress,
}));
