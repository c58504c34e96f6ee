// The official `openai` npm package streaming from a reagent agent (tests/api/openai/clients.rs).
// Usage: node openai_stream.mjs BASE_URL API_KEY MODEL; prints one JSON object of what it saw.
import OpenAI from "openai";

const [baseURL, apiKey, model] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0 });
const { data: stream, response } = await client.chat.completions
  .create({
    model,
    messages: [{ role: "user", content: "stream from node" }],
    stream: true,
    stream_options: { include_usage: true },
  })
  .withResponse();

const seen = { role: null, content: "", reasoning: "", finish_reason: null, usage: null };
for await (const chunk of stream) {
  if (chunk.choices.length === 0) {
    const { prompt_tokens, completion_tokens, total_tokens } = chunk.usage;
    seen.usage = { prompt_tokens, completion_tokens, total_tokens };
    continue;
  }
  const { delta, finish_reason } = chunk.choices[0];
  if (delta.role) seen.role = delta.role;
  if (delta.content) seen.content += delta.content;
  if (delta.reasoning_content) seen.reasoning += delta.reasoning_content;
  if (delta.tool_calls) throw new Error("tool steps must never arrive as tool_calls");
  if (finish_reason) seen.finish_reason = finish_reason;
}
seen.run_id = response.headers.get("x-reagent-run-id");
seen.conversation_id = response.headers.get("x-reagent-conversation-id");
console.log(JSON.stringify(seen));
