// A reagent agent in a web page with the official AG-UI client: HttpAgent sends the question
// (and the whole history, which reagent de-duplicates) to POST /ag-ui/{agent}, and its
// subscriber callbacks draw the run as it happens: tool calls with their arguments and results,
// reasoning, the streamed answer, and an approval the run waits on (Approve / Reject resumes it).
import { HttpAgent } from "@ag-ui/client";

const $ = (id) => document.getElementById(id);
const log = $("log");
const fields = ["server", "agent", "key"];

// Settings: the query string (?server=&agent=&key=) wins over what this browser remembered.
const query = new URLSearchParams(location.search);
for (const name of fields) {
  const value = query.get(name) ?? localStorage.getItem(`reagent-example.${name}`);
  if (value !== null) $(name).value = value;
  $(name).addEventListener("change", () => {
    localStorage.setItem(`reagent-example.${name}`, $(name).value);
    agent = null;
  });
}

let agent = null;

/** The client for the current settings; the thread (a reagent conversation) lives as long as it. */
function client() {
  if (agent) return agent;
  const key = $("key").value.trim();
  agent = new HttpAgent({
    url: `${$("server").value.replace(/\/+$/, "")}/ag-ui/${encodeURIComponent($("agent").value)}`,
    headers: key ? { Authorization: `Bearer ${key}` } : {},
    threadId: crypto.randomUUID(),
  });
  return agent;
}

function element(tag, className, text) {
  const el = document.createElement(tag);
  if (className) el.className = className;
  if (text !== undefined) el.textContent = text;
  return el;
}

function setState(state) {
  document.body.dataset.state = state;
  $("send").disabled = state === "running";
}

/** One run drawn in `block` (an assistant message), from the events the client verified. */
function subscriber(block) {
  let answer = null;
  let thinking = null;
  const tool = (id) => log.querySelector(`.tool[data-call-id="${CSS.escape(id)}"]`);
  const scroll = () => block.scrollIntoView({ block: "end" });
  return {
    onTextMessageStartEvent() {
      answer = block.appendChild(element("div", "answer"));
    },
    onTextMessageContentEvent({ event }) {
      answer ??= block.appendChild(element("div", "answer"));
      answer.textContent += event.delta;
      scroll();
    },
    onReasoningMessageContentEvent({ event }) {
      thinking ??= block.appendChild(element("div", "thinking", "Thinking: "));
      thinking.textContent += event.delta;
    },
    onToolCallStartEvent({ event }) {
      const card = block.appendChild(element("div", "tool"));
      card.dataset.callId = event.toolCallId;
      card.dataset.status = "running";
      card.append(element("span", "name", event.toolCallName), element("span", "status", "running…"));
      card.append(element("pre", "args"));
      scroll();
    },
    onToolCallArgsEvent({ event, toolCallBuffer }) {
      // The buffer is what came before this event's delta.
      const args = tool(event.toolCallId)?.querySelector(".args");
      if (args) args.textContent = toolCallBuffer + event.delta;
    },
    onToolCallResultEvent({ event }) {
      const card = tool(event.toolCallId);
      if (!card) return;
      // reagent reports a failed or blocked call as an observation starting "Error".
      const failed = /^Error\b/.test(event.content);
      card.dataset.status = failed ? "failed" : "done";
      card.querySelector(".status").textContent = failed ? "failed" : "done";
      card.append(element("pre", "result", `→ ${event.content}`));
      scroll();
    },
    onRunFinishedEvent(params) {
      if (params.outcome === "interrupt") {
        for (const interrupt of params.interrupts) block.append(approval(interrupt));
        setState("waiting");
      }
    },
    onRunErrorEvent({ event }) {
      block.append(element("div", "error", `The run failed: ${event.message}`));
    },
  };
}

/** A card for an interrupt: a tool call waiting for approval (the only kind this page raises). */
function approval(interrupt) {
  const card = element("div", "approval");
  card.dataset.interruptId = interrupt.id;
  card.append(element("div", "", interrupt.message || `The agent waits for you (${interrupt.reason}).`));
  const buttons = card.appendChild(element("div", "buttons"));
  const approve = buttons.appendChild(element("button", "approve", "Approve"));
  const reject = buttons.appendChild(element("button", "reject danger", "Reject"));
  approve.type = reject.type = "button";
  const answer = (approved) => {
    card.dataset.answer = approved ? "approved" : "rejected";
    const resume = client().pendingInterrupts.map((i) => ({
      interruptId: i.id,
      status: "resolved",
      payload: { approved },
    }));
    run({ resume }, card.closest(".assistant"));
  };
  approve.addEventListener("click", () => answer(true));
  reject.addEventListener("click", () => answer(false));
  return card;
}

/** Runs the agent once; `block` is the assistant message a resumed run goes on in. */
async function run(params, block) {
  setState("running");
  block ??= log.appendChild(element("div", "assistant"));
  try {
    await client().runAgent(params, subscriber(block));
    if (document.body.dataset.state === "running") setState("idle");
  } catch (e) {
    block.append(element("div", "error", String(e?.message ?? e)));
    setState("error");
  }
}

$("composer").addEventListener("submit", (e) => {
  e.preventDefault();
  const text = $("question").value.trim();
  if (!text || document.body.dataset.state === "running") return;
  if (document.body.dataset.state === "waiting") {
    // reagent refuses a new question while the run waits: answer the approval first.
    log.lastElementChild?.querySelector(".approval:not([data-answer]) .approve")?.focus();
    return;
  }
  $("question").value = "";
  log.append(element("div", "user", text));
  client().addMessage({ id: crypto.randomUUID(), role: "user", content: text });
  run({});
});

$("new-thread").addEventListener("click", () => {
  agent = null;
  log.replaceChildren();
  setState("idle");
});

setState("idle");
