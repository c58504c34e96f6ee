//! A run's events as AG-UI events (docs/protocols.md): tool steps as `TOOL_CALL_START`/`ARGS`/
//! `END` and `TOOL_CALL_RESULT`, `thinking` as a reasoning message, the answer as one text
//! message, DAG steps as `STEP_*` with the plan in `STATE_SNAPSHOT`, everything else as `CUSTOM`
//! named `reagent.<event>`; then `RUN_FINISHED` or `RUN_ERROR`, never both. A pending approval
//! ends the stream with `RUN_FINISHED` and an interrupt outcome: the run waits, and the next
//! request's `resume[]` answers it (never a `CUSTOM` event, which clients would not resume).

use std::collections::BTreeSet;

use serde_json::{json, Value};
use uuid::Uuid;

use crate::agent::caller_tools::CallerCall;
use crate::agent::events::{AgentEvent, AnswerEvent, EventView, StepEvent};
use crate::agent::RunOutcome;
use crate::domain::{EventName, RunStatus};
use crate::runs::LoggedEvent;
use crate::server::frontends::body::{data, stored, Encoder};

pub struct AgUi {
    thread_id: String,
    run_id: String,
    /// reagent's run, which makes message ids unique.
    run: Uuid,
    /// The open text message.
    text: Option<String>,
    texts: u32,
    /// Whether any answer text was sent.
    answered: bool,
    /// Open DAG steps.
    steps: BTreeSet<String>,
    /// The DAG plan and its steps' states (`STATE_SNAPSHOT`).
    plan: Option<Value>,
    /// Tool calls started and not ended: `(call_id, tool)`.
    calls: Vec<(String, String)>,
}

impl AgUi {
    pub fn new(thread_id: String, run_id: String, run: Uuid) -> Self {
        Self {
            thread_id,
            run_id,
            run,
            text: None,
            texts: 0,
            answered: false,
            steps: BTreeSet::new(),
            plan: None,
            calls: Vec::new(),
        }
    }

    /// A call's id in the thread: reagent's ids are unique within a run only, and the client
    /// merges tool calls by id across the thread's runs. Caller tool calls keep their own id,
    /// which the client answers.
    fn call_id(&self, id: &str) -> String {
        format!("{}-{id}", self.run.simple())
    }

    /// Caller tool calls: started and ended like any call; `done` turns them into interrupts.
    fn caller_calls(&mut self, out: &mut String, calls: Vec<CallerCall>) {
        for c in calls {
            data(
                out,
                &json!({"type": "TOOL_CALL_START", "toolCallId": c.call_id, "toolCallName": c.name}),
            );
            data(
                out,
                &json!({"type": "TOOL_CALL_ARGS", "toolCallId": c.call_id, "delta": c.arguments}),
            );
            data(
                out,
                &json!({"type": "TOOL_CALL_END", "toolCallId": c.call_id}),
            );
        }
    }

    fn custom(&self, out: &mut String, name: &str, value: Value) {
        data(
            out,
            &json!({"type": "CUSTOM", "name": format!("reagent.{name}"), "value": value}),
        );
    }

    fn open_text(&mut self, out: &mut String) -> String {
        if let Some(id) = &self.text {
            return id.clone();
        }
        self.texts += 1;
        let id = format!("{}-answer-{}", self.run, self.texts);
        data(
            out,
            &json!({"type": "TEXT_MESSAGE_START", "messageId": id, "role": "assistant"}),
        );
        self.text = Some(id.clone());
        id
    }

    fn text_delta(&mut self, out: &mut String, delta: &str) {
        if delta.is_empty() {
            return;
        }
        let id = self.open_text(out);
        self.answered = true;
        // Written directly: one per token, no intermediate `Value`.
        let quote = |s: &str| serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into());
        out.push_str("data: {\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":");
        out.push_str(&quote(&id));
        out.push_str(",\"delta\":");
        out.push_str(&quote(delta));
        out.push_str("}\n\n");
    }

    fn close_text(&mut self, out: &mut String) {
        if let Some(id) = self.text.take() {
            data(out, &json!({"type": "TEXT_MESSAGE_END", "messageId": id}));
        }
    }

    /// Closes what `RUN_FINISHED` must not find open: the text message and DAG steps.
    fn close_all(&mut self, out: &mut String) {
        self.close_text(out);
        for step in std::mem::take(&mut self.steps) {
            data(out, &json!({"type": "STEP_FINISHED", "stepName": step}));
        }
    }

    /// An answer event other than a delta.
    fn answer(&mut self, out: &mut String, answer: AnswerEvent) {
        match answer {
            AnswerEvent::Start { .. } | AnswerEvent::Delta { .. } => {}
            // Sent text cannot be taken back: the replacement is a new message.
            AnswerEvent::Reset => {
                self.close_text(out);
                self.answered = false;
                self.custom(out, "answer_reset", json!({}));
            }
            AnswerEvent::Done { content, .. } => {
                if !self.answered {
                    self.text_delta(out, &content);
                }
                self.close_text(out);
            }
        }
    }

    fn reasoning(&self, out: &mut String, id: u64, text: &str) {
        let id = format!("{}-reasoning-{id}", self.run);
        data(out, &json!({"type": "REASONING_START", "messageId": id}));
        data(
            out,
            &json!({"type": "REASONING_MESSAGE_START", "messageId": id, "role": "reasoning"}),
        );
        data(
            out,
            &json!({"type": "REASONING_MESSAGE_CONTENT", "messageId": id, "delta": text}),
        );
        data(
            out,
            &json!({"type": "REASONING_MESSAGE_END", "messageId": id}),
        );
        data(out, &json!({"type": "REASONING_END", "messageId": id}));
    }

    /// The lines of one `step` event; true when it ends the stream (an approval).
    fn step(&mut self, out: &mut String, ev: &LoggedEvent, step: StepEvent) -> bool {
        match step {
            StepEvent::Thinking { reasoning, .. } if !reasoning.trim().is_empty() => {
                self.reasoning(out, ev.id, &reasoning)
            }
            StepEvent::Thinking { .. } => {}
            StepEvent::ToolStart {
                call_id,
                tool,
                arguments,
                ..
            } => self.tool_start(out, &call_id, tool, &arguments),
            StepEvent::ToolEnd {
                call_id,
                observation,
                ..
            } => self.tool_end(out, &call_id, observation),
            StepEvent::ApprovalRequired {
                approval_id,
                tool,
                arguments,
                ..
            } => {
                self.interrupt(out, approval_id, &tool, &arguments);
                return true;
            }
            StepEvent::CallerToolCalls { calls, .. } => self.caller_calls(out, calls),
            StepEvent::Plan { round, steps } => {
                let steps: Vec<Value> = steps
                    .iter()
                    .map(|s| json!({"id": s.id, "task": s.task, "dependencies": s.dependencies, "status": "queued"}))
                    .collect();
                self.plan = Some(json!({"round": round, "steps": steps}));
                self.snapshot(out);
            }
            StepEvent::DagStep {
                step_id,
                status,
                result,
                error,
                ..
            } => self.dag_step(out, &step_id, status, result, error),
            _ => {
                let value = stored(ev);
                let name = value["type"].as_str().unwrap_or("step").to_string();
                self.custom(out, &name, value);
            }
        }
        false
    }

    fn tool_start(&mut self, out: &mut String, call_id: &str, tool: String, arguments: &Value) {
        let call_id = self.call_id(call_id);
        data(
            out,
            &json!({"type": "TOOL_CALL_START", "toolCallId": call_id, "toolCallName": tool}),
        );
        data(
            out,
            &json!({"type": "TOOL_CALL_ARGS", "toolCallId": call_id, "delta": arguments.to_string()}),
        );
        data(
            out,
            &json!({"type": "TOOL_CALL_END", "toolCallId": call_id}),
        );
        self.calls.push((call_id, tool));
    }

    fn tool_end(&mut self, out: &mut String, call_id: &str, observation: String) {
        let call_id = self.call_id(call_id);
        self.calls.retain(|(c, _)| *c != call_id);
        data(
            out,
            &json!({"type": "TOOL_CALL_RESULT", "messageId": format!("{call_id}-result"),
                    "toolCallId": call_id, "content": observation, "role": "tool"}),
        );
    }

    fn snapshot(&self, out: &mut String) {
        if let Some(plan) = &self.plan {
            data(
                out,
                &json!({"type": "STATE_SNAPSHOT", "snapshot": {"dag": plan}}),
            );
        }
    }

    fn dag_step(
        &mut self,
        out: &mut String,
        id: &str,
        status: crate::agent::events::DagStatus,
        result: Option<String>,
        error: Option<String>,
    ) {
        use crate::agent::events::DagStatus;
        let step = self
            .plan
            .as_mut()
            .and_then(|p| p["steps"].as_array_mut())
            .and_then(|steps| steps.iter_mut().find(|s| s["id"] == id));
        if let Some(step) = step {
            step["status"] = json!(status.as_str());
            if let Some(r) = result {
                step["result"] = json!(r);
            }
            if let Some(e) = error {
                step["error"] = json!(e);
            }
        }
        if status != DagStatus::Queued && !self.steps.contains(id) {
            data(out, &json!({"type": "STEP_STARTED", "stepName": id}));
            self.steps.insert(id.to_string());
        }
        if matches!(
            status,
            DagStatus::Completed | DagStatus::Failed | DagStatus::Skipped
        ) {
            self.steps.remove(id);
            data(out, &json!({"type": "STEP_FINISHED", "stepName": id}));
        }
        self.snapshot(out);
    }

    /// Ends the stream on a pending approval: the run waits for `resume[]`.
    fn interrupt(&mut self, out: &mut String, approval_id: String, tool: &str, arguments: &Value) {
        self.close_all(out);
        let mut interrupt = json!({
            "id": approval_id,
            "reason": "tool_approval",
            "message": format!("Approve the call to {tool} with {arguments}?"),
            "responseSchema": {"type": "object", "properties": {
                "approved": {"type": "boolean"}, "reason": {"type": "string"}}},
        });
        // The call waiting is the last one of that tool started and not ended.
        if let Some((call_id, _)) = self.calls.iter().rev().find(|(_, t)| t == tool) {
            interrupt["toolCallId"] = json!(call_id);
        }
        data(
            out,
            &json!({"type": "RUN_FINISHED", "threadId": self.thread_id, "runId": self.run_id,
                    "outcome": {"type": "interrupt", "interrupts": [interrupt]}}),
        );
    }

    fn done(&mut self, out: &mut String, outcome: RunOutcome) {
        if outcome.status == RunStatus::Failed {
            let message = outcome.error.as_deref().unwrap_or(&outcome.answer);
            return self.error(out, message);
        }
        if outcome.status == RunStatus::RequiresAction {
            return self.wait_for_tools(out, &outcome);
        }
        if !self.answered && outcome.status != RunStatus::Cancelled {
            self.text_delta(out, &outcome.answer);
        }
        self.close_all(out);
        let kind = match outcome.status {
            RunStatus::Cancelled => "cancelled",
            _ => "success",
        };
        let u = &outcome.usage;
        data(
            out,
            &json!({"type": "RUN_FINISHED", "threadId": self.thread_id, "runId": self.run_id,
                    "outcome": {"type": kind},
                    "result": {"status": outcome.status.as_str(), "runId": self.run},
                    "usage": [{"inputTokens": u.prompt_tokens, "outputTokens": u.completion_tokens,
                               "totalTokens": u.total_tokens}]}),
        );
    }

    /// The run waits for its caller tools: one interrupt per call, answered by a `tool`
    /// message (or a resume payload) each.
    fn wait_for_tools(&mut self, out: &mut String, outcome: &RunOutcome) {
        self.close_all(out);
        let interrupts: Vec<Value> = outcome
            .required_action
            .iter()
            .flat_map(|a| &a.tool_calls)
            .map(|c| {
                json!({"id": c.call_id, "reason": "tool_call", "toolCallId": c.call_id,
                       "message": format!("Run {} and answer with a tool message", c.name)})
            })
            .collect();
        data(
            out,
            &json!({"type": "RUN_FINISHED", "threadId": self.thread_id, "runId": self.run_id,
                    "outcome": {"type": "interrupt", "interrupts": interrupts}}),
        );
    }

    /// `RUN_ERROR`, the stream's last event (no `RUN_FINISHED` follows it).
    fn error(&mut self, out: &mut String, message: &str) {
        self.close_text(out);
        data(
            out,
            &json!({"type": "RUN_ERROR", "message": message, "code": "run_failed"}),
        );
    }
}

/// Whether a tool call id is one of reagent's own calls as this encoder names them.
pub fn is_own_call(id: &str) -> bool {
    id.len() > 33 && id.as_bytes()[32] == b'-' && id[..32].bytes().all(|b| b.is_ascii_hexdigit())
}

impl Encoder for AgUi {
    fn event(&mut self, ev: &LoggedEvent, out: &mut String) -> bool {
        match ev.view() {
            EventView::AnswerDelta(text) => self.text_delta(out, &text),
            EventView::Agent(AgentEvent::Answer(answer)) => self.answer(out, answer),
            EventView::Agent(AgentEvent::Step(step)) => return self.step(out, ev, step),
            EventView::Agent(AgentEvent::Done(outcome)) => {
                self.done(out, outcome);
                return true;
            }
            EventView::Unreadable(EventName::Done, e) => {
                self.error(out, &format!("unreadable done event: {e}"));
                return true;
            }
            // Passed on as stored, whether or not it reads.
            EventView::Agent(AgentEvent::Start(_)) | EventView::Unreadable(EventName::Start, _) => {
                self.custom(out, "start", stored(ev))
            }
            EventView::Agent(AgentEvent::Compact(_))
            | EventView::Unreadable(EventName::Compact, _) => {
                self.custom(out, "compact", stored(ev))
            }
            EventView::Unreadable(..) => {}
        }
        false
    }

    fn cut_short(&mut self, out: &mut String) {
        self.error(out, "the run's events ended without its outcome");
    }
}
