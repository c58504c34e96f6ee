// The `ai` package's own chat (AbstractChat with its DefaultChatTransport, the logic behind
// React's useChat) talking to a reagent agent over POST /ai-sdk/{agent}
// (tests/api/frontends/). Usage: node ai_sdk_chat.mjs URL API_KEY STEPS_JSON [CHAT_ID]
// STEPS: [{user: "text", tools?} | {approve: true|false}]; approvals are answered with
// addToolApprovalResponse, client tool calls (`tools`, sent in the request body) by onToolCall
// with addToolOutput (`client: <name>(<input JSON>)`), both sent by sendAutomaticallyWhen, as an
// app would.
// Prints {chatId, steps: [{chunks, status, error}], messages}.
import { randomUUID } from "node:crypto";
import {
  AbstractChat,
  DefaultChatTransport,
  lastAssistantMessageIsCompleteWithApprovalResponses,
  lastAssistantMessageIsCompleteWithToolCalls,
} from "ai";

const [api, apiKey, stepsJson, chatId] = process.argv.slice(2);

class State {
  status = "ready";
  error = undefined;
  messages = [];
  pushMessage = (m) => {
    this.messages = this.messages.concat(m);
  };
  popMessage = () => {
    this.messages = this.messages.slice(0, -1);
  };
  replaceMessage = (i, m) => {
    this.messages = [...this.messages.slice(0, i), m, ...this.messages.slice(i + 1)];
  };
  snapshot = (thing) => structuredClone(thing);
}

// Every chunk the SDK parsed (and validated against its schema), in order.
let chunks = [];
const base = new DefaultChatTransport({ api, headers: { Authorization: `Bearer ${apiKey}` } });
const transport = {
  sendMessages: async (options) =>
    (await base.sendMessages(options)).pipeThrough(
      new TransformStream({
        transform(chunk, controller) {
          chunks.push(chunk);
          controller.enqueue(chunk);
        },
      }),
    ),
  reconnectToStream: (options) => base.reconnectToStream(options),
};
const errors = [];
const state = new State();
const chat = new AbstractChat({
  id: chatId || randomUUID(),
  transport,
  state,
  onError: (e) => errors.push(String(e?.message ?? e)),
  // Not awaited: the SDK's own advice inside onToolCall.
  onToolCall: ({ toolCall }) => {
    chat.addToolOutput({
      tool: toolCall.toolName,
      toolCallId: toolCall.toolCallId,
      output: `client: ${toolCall.toolName}(${JSON.stringify(toolCall.input)})`,
    });
  },
  sendAutomaticallyWhen: (o) =>
    lastAssistantMessageIsCompleteWithApprovalResponses(o) ||
    lastAssistantMessageIsCompleteWithToolCalls(o),
});

async function settled() {
  for (let i = 0; i < 600 && !["ready", "error"].includes(state.status); i++) {
    await new Promise((r) => setTimeout(r, 20));
  }
}

const report = { chatId: chat.id, steps: [] };
for (const step of JSON.parse(stepsJson)) {
  chunks = [];
  errors.length = 0;
  if (step.user !== undefined) {
    await chat.sendMessage({ text: step.user }, step.tools ? { body: { tools: step.tools } } : {});
    // A client tool's output is sent automatically: wait for that request too.
    await new Promise((r) => setTimeout(r, 100));
  } else {
    const last = state.messages[state.messages.length - 1];
    for (const part of last.parts.filter((p) => p.state === "approval-requested")) {
      await chat.addToolApprovalResponse({ id: part.approval.id, approved: step.approve });
    }
    // sendAutomaticallyWhen sends the answers; wait for the request to start and end.
    await new Promise((r) => setTimeout(r, 50));
  }
  await settled();
  report.steps.push({ chunks, status: state.status, errors: [...errors] });
}
report.messages = state.messages;
console.log(JSON.stringify(report));
