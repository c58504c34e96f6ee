// A caller-tool round trip with the official `openai` npm package (tests/api/openai/tools.rs).
// Usage: node openai_tools.mjs BASE_URL API_KEY MODEL. Declares `get_secret`, a function of this
// process; the agent calls it, the client runs it and sends the result back with the history,
// then reads the final answer — not streamed, then streamed. Prints one JSON object.
import OpenAI from "openai";

const [baseURL, apiKey, model] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0 });
const tools = [{
  type: "function",
  function: {
    name: "get_secret",
    description: "The secret of a name, known only to the client",
    parameters: { type: "object", properties: { name: { type: "string" } }, required: ["name"] },
  },
}];
const getSecret = ({ name }) => `the secret of ${name} is 42`;
const run = (call) => {
  if (call.function.name !== "get_secret") throw new Error(`unexpected call ${call.function.name}`);
  return { role: "tool", tool_call_id: call.id, content: getSecret(JSON.parse(call.function.arguments)) };
};

async function plain() {
  const messages = [{ role: "user", content: "what is the secret of ada?" }];
  const first = await client.chat.completions.create({ model, messages, tools });
  const message = first.choices[0].message;
  const calls = message.tool_calls ?? [];
  messages.push({ role: "assistant", content: message.content, tool_calls: calls });
  messages.push(...calls.map(run));
  const final = await client.chat.completions.create({ model, messages, tools });
  return {
    finish_reasons: [first.choices[0].finish_reason, final.choices[0].finish_reason],
    calls,
    answer: final.choices[0].message.content,
  };
}

async function streamed() {
  const messages = [{ role: "user", content: "what is the secret of bob?" }];
  const calls = [];
  const finish = [];
  for await (const chunk of await client.chat.completions.create({ model, messages, tools, stream: true })) {
    const choice = chunk.choices[0];
    if (!choice) continue;
    for (const d of choice.delta.tool_calls ?? []) {
      calls[d.index] ??= { id: "", type: "function", function: { name: "", arguments: "" } };
      calls[d.index].id += d.id ?? "";
      calls[d.index].function.name += d.function?.name ?? "";
      calls[d.index].function.arguments += d.function?.arguments ?? "";
    }
    if (choice.finish_reason) finish.push(choice.finish_reason);
  }
  messages.push({ role: "assistant", content: null, tool_calls: calls });
  messages.push(...calls.map(run));
  let answer = "";
  for await (const chunk of await client.chat.completions.create({ model, messages, tools, stream: true })) {
    const choice = chunk.choices[0];
    if (choice?.delta.content) answer += choice.delta.content;
    if (choice?.finish_reason) finish.push(choice.finish_reason);
  }
  return { finish_reasons: finish, calls, answer };
}

console.log(JSON.stringify({ plain: await plain(), streamed: await streamed() }));
