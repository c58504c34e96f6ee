// The `ai` package's DefaultChatTransport.reconnectToStream (what useChat's `resume: true` calls
// after a reload) against GET /ai-sdk/{agent}/{id}/stream (tests/api/frontends/).
// Usage: node ai_sdk_resume.mjs URL API_KEY CHAT_ID
// Prints `connected` once the chat's stream is open, then {unknown, chunks}: what a chat the
// server never saw gets (null: no active stream) and every chunk of the resumed stream, each
// parsed and checked against the SDK's chunk schema.
import { randomUUID } from "node:crypto";
import { DefaultChatTransport } from "ai";

const [api, apiKey, chatId] = process.argv.slice(2);
const transport = new DefaultChatTransport({ api, headers: { Authorization: `Bearer ${apiKey}` } });

const unknown = await transport.reconnectToStream({ chatId: `never-${randomUUID()}` });
const stream = await transport.reconnectToStream({ chatId });
if (stream === null) {
  console.log(JSON.stringify({ unknown, chunks: null }));
  process.exit(0);
}
console.log("connected");
const chunks = [];
const reader = stream.getReader();
for (;;) {
  const { done, value } = await reader.read();
  if (done) break;
  chunks.push(value);
}
console.log(JSON.stringify({ unknown, chunks }));
