// The official `openai` npm package's Responses API against a reagent agent
// (tests/api/openai/responses_npm.rs).
// Usage: node openai_responses.mjs BASE_URL API_KEY MODEL. Runs the scenario below and prints one
// JSON object with what the client saw; any exception fails the script (non-zero exit).
import OpenAI from "openai";

const [baseURL, apiKey, model] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0 });
const out = {};

const summary = (r) => ({
  id: r.id,
  object: r.object,
  status: r.status,
  model: r.model,
  text: r.output_text,
  types: r.output.map((i) => i.type),
  conversation: r.conversation?.id ?? null,
  previous_response_id: r.previous_response_id ?? null,
});
const event = (e) => ({ type: e.type, seq: e.sequence_number });

// 1. Plain.
out.plain = summary(await client.responses.create({ model, input: "hello" }));

// 2. The stream helper (its accumulator checks the event order) to a final text.
const stream = client.responses.stream({ model, input: "use a tool" });
const events = [];
for await (const e of stream) events.push(event(e));
const final = await stream.finalResponse();
out.streamed = { ...summary(final), events };

// 3. Continued through previous_response_id.
out.continued = summary(
  await client.responses.create({ model, input: "follow up", previous_response_id: final.id }),
);

// 4. A caller tool round trip: the client runs its own function and sends its output.
const tools = [{
  type: "function",
  name: "get_weather",
  description: "The weather in a city, known only to the client",
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  strict: false,
}];
const asked = await client.responses.create({ model, input: "weather in Oslo?", tools });
const calls = asked.output.filter((i) => i.type === "function_call");
const weather = ({ city }) => `sunny in ${city}`;
const answered = await client.responses.create({
  model,
  tools,
  previous_response_id: asked.id,
  input: calls.map((c) => ({
    type: "function_call_output",
    call_id: c.call_id,
    output: weather(JSON.parse(c.arguments)),
  })),
});
out.caller = { asked: summary(asked), calls, answered: summary(answered) };

// 5. Background: created at once, its stream dropped after the first finished item, resumed
// after the last sequence number seen, then polled to completion.
const bg = await client.responses.create({ model, input: "slow work", background: true });
const first = [];
const live = await client.responses.retrieve(bg.id, { stream: true });
for await (const e of live) {
  first.push(event(e));
  if (e.type === "response.output_item.done") break; // leaving the loop aborts the request
}
const rest = [];
const resumed = await client.responses.retrieve(bg.id, {
  stream: true,
  starting_after: first[first.length - 1].seq,
});
for await (const e of resumed) rest.push(event(e));
let polled = await client.responses.retrieve(bg.id);
while (polled.status === "queued" || polled.status === "in_progress") {
  await new Promise((r) => setTimeout(r, 50));
  polled = await client.responses.retrieve(bg.id);
}
out.background = { created: summary(bg), first, rest, done: summary(polled) };

console.log(JSON.stringify(out));
