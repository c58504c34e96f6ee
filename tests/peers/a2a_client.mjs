// The official `@a2a-js/sdk` client against a reagent agent over `/a2a/{agent}`.
// Usage: node a2a_client.mjs AGENT_URL KEY [v03]
// A streamed send, a get of its task, and a non-streaming follow-up in the same context; with
// `v03` the client keeps only the card's 0.3 interface (the SDK's legacy JSON-RPC transport).
// Prints what it saw as one JSON object.
import { randomUUID } from "node:crypto";
import {
  ClientFactory,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
} from "@a2a-js/sdk/client";
import { Role, TaskState } from "@a2a-js/sdk";

const [url, key, version] = process.argv.slice(2);
const authed = (input, init = {}) => {
  const headers = new Headers(init.headers);
  headers.set("authorization", `Bearer ${key}`);
  return fetch(input, { ...init, headers });
};

const resolver = new DefaultAgentCardResolver({ fetchImpl: authed });
// The card path is resolved against the URL as a directory.
const card = await resolver.resolve(url.endsWith("/") ? url : `${url}/`);
const seenCard = {
  name: card.name,
  streaming: card.capabilities?.streaming,
  versions: card.supportedInterfaces.map((i) => i.protocolVersion),
};
if (version === "v03") {
  card.supportedInterfaces = card.supportedInterfaces.filter((i) => i.protocolVersion.startsWith("0.3"));
}
const factory = new ClientFactory({
  transports: [new JsonRpcTransportFactory({ fetchImpl: authed, legacyCompat: { enabled: true } })],
  cardResolver: resolver,
});
const client = await factory.createFromAgentCard(card);

const message = (text, contextId = "") => ({
  messageId: randomUUID(),
  contextId,
  taskId: "",
  role: Role.ROLE_USER,
  parts: [{ content: { $case: "text", value: text }, metadata: undefined, filename: "", mediaType: "" }],
  metadata: undefined,
  extensions: [],
  referenceTaskIds: [],
});
const request = (msg) => ({ tenant: "", message: msg, configuration: undefined, metadata: undefined });
const text = (parts) => parts.map((p) => (p.content?.$case === "text" ? p.content.value : "")).join("");
const state = (s) => TaskState[s];

const kinds = [];
const states = [];
let answer = "";
let taskId;
let contextId;
for await (const ev of client.sendMessageStream(request(message("echo x")))) {
  const { $case, value } = ev.payload;
  kinds.push($case);
  if ($case === "task") {
    taskId = value.id;
    contextId = value.contextId;
    states.push(state(value.status.state));
  } else if ($case === "statusUpdate") {
    states.push(state(value.status.state));
  } else if ($case === "artifactUpdate") {
    answer += text(value.artifact.parts);
  }
}
const task = await client.getTask({ tenant: "", id: taskId, historyLength: undefined });
const followUp = await client.sendMessage(request(message("again", contextId)));
const followTask = followUp;
console.log(
  JSON.stringify({
    card: seenCard,
    stream: { kinds, states, answer, taskId, contextId },
    get: { state: state(task.status.state), answer: task.artifacts.map((a) => text(a.parts)).join("") },
    followUp: {
      state: state(followTask.status?.state),
      answer: (followTask.artifacts ?? []).map((a) => text(a.parts)).join(""),
      contextId: followTask.contextId,
      taskId: followTask.id,
    },
  }),
);
