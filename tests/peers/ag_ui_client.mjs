// The official `@ag-ui/client` (HttpAgent, whose event verification throws on any protocol
// violation) running a reagent agent over POST /ag-ui/{agent} (tests/api/frontends/).
// Usage: node ag_ui_client.mjs URL API_KEY STEPS_JSON [THREAD_ID]
// STEPS: [{user?, resume?: "approve"|"reject"|"cancel", toolOutput?, tools?, context?, state?}]:
// `toolOutput` answers pending frontend tool calls with a tool message (and their resume
// entries, which the client requires for every open interrupt); one run per step on
// one agent (one thread), each new run resending the whole history as clients do.
// Prints {threadId, runs: [{events, newMessages, pending, error}], messages}.
import { HttpAgent } from "@ag-ui/client";
import { randomUUID } from "node:crypto";

const [url, apiKey, stepsJson, threadId] = process.argv.slice(2);
const agent = new HttpAgent({
  url,
  headers: { Authorization: `Bearer ${apiKey}` },
  threadId: threadId || randomUUID(),
});
const report = { threadId: agent.threadId, runs: [] };
for (const step of JSON.parse(stepsJson)) {
  if (step.user) agent.addMessage({ id: randomUUID(), role: "user", content: step.user });
  if (step.state) agent.setState(step.state);
  const params = { forwardedProps: { from: "node" } };
  if (step.context) params.context = step.context;
  if (step.tools) params.tools = step.tools;
  if (step.toolOutput !== undefined) {
    params.resume = agent.pendingInterrupts.map((i) => {
      agent.addMessage({ id: randomUUID(), role: "tool", toolCallId: i.toolCallId, content: step.toolOutput });
      return { interruptId: i.id, status: "resolved" };
    });
  }
  if (step.resume) {
    params.resume = agent.pendingInterrupts.map((i) => ({
      interruptId: i.id,
      status: step.resume === "cancel" ? "cancelled" : "resolved",
      payload: { approved: step.resume === "approve" },
    }));
  }
  const run = { events: [] };
  try {
    const { newMessages } = await agent.runAgent(params, {
      onEvent: ({ event }) => {
        run.events.push(event);
      },
    });
    run.newMessages = newMessages;
  } catch (e) {
    run.error = String(e?.message ?? e);
  }
  run.pending = agent.pendingInterrupts;
  report.runs.push(run);
}
report.messages = agent.messages;
report.state = agent.state;
console.log(JSON.stringify(report));
