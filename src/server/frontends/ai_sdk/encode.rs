//! A run's events as UI message stream chunks (docs/protocols.md): tool steps as dynamic,
//! provider-executed tool parts (`tool-input-start`/`-available`, `tool-output-available` or
//! `-error`), `thinking` as reasoning parts, the answer as one text part, DAG plans and other
//! reagent events as `data-reagent-<event>` parts; a pending approval as
//! `tool-approval-request`, which ends the stream; then `finish-step`, `finish` (after an `error`
//! chunk when the run failed) and `data: [DONE]`. Only documented fields are sent.

use std::collections::HashSet;

use serde_json::{json, Value};
use uuid::Uuid;

use crate::agent::caller_tools::CallerCall;
use crate::agent::events::{AgentEvent, AnswerEvent, EventView, StepEvent};
use crate::agent::RunOutcome;
use crate::domain::{EventName, RunStatus};
use crate::runs::LoggedEvent;
use crate::server::frontends::body::{data, stored, Encoder};

const DONE: &str = "data: [DONE]\n\n";

pub struct AiSdk {
    run: Uuid,
    /// A continuation after approvals: a blocked call is a denied one.
    resumed: bool,
    text: Option<String>,
    texts: u32,
    answered: bool,
    /// Tool calls started and not ended: `(call_id, tool)`.
    calls: Vec<(String, String)>,
    /// Calls that asked for approval in this stream.
    asked: HashSet<String>,
    /// A replay (a reconnect): only these approvals are still open; the others were answered
    /// and are passed over.
    open: Option<HashSet<String>>,
}

impl AiSdk {
    pub fn new(run: Uuid, resumed: bool) -> Self {
        Self {
            run,
            resumed,
            text: None,
            texts: 0,
            answered: false,
            calls: Vec::new(),
            asked: HashSet::new(),
            open: None,
        }
    }

    /// The encoder of a run's replay from its first event, `open` its unanswered approvals.
    pub fn replay(run: Uuid, open: HashSet<String>) -> Self {
        Self {
            open: Some(open),
            ..Self::new(run, false)
        }
    }

    fn text_delta(&mut self, out: &mut String, delta: &str) {
        if delta.is_empty() {
            return;
        }
        let id = match &self.text {
            Some(id) => id.clone(),
            None => {
                self.texts += 1;
                let id = format!("text-{}", self.texts);
                data(out, &json!({"type": "text-start", "id": id}));
                self.text = Some(id.clone());
                id
            }
        };
        self.answered = true;
        // Written directly: one per token, no intermediate `Value`.
        let quote = |s: &str| serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into());
        out.push_str("data: {\"type\":\"text-delta\",\"id\":");
        out.push_str(&quote(&id));
        out.push_str(",\"delta\":");
        out.push_str(&quote(delta));
        out.push_str("}\n\n");
    }

    fn close_text(&mut self, out: &mut String) {
        if let Some(id) = self.text.take() {
            data(out, &json!({"type": "text-end", "id": id}));
        }
    }

    /// An answer event other than a delta.
    fn answer(&mut self, out: &mut String, answer: AnswerEvent) {
        match answer {
            // Sent text cannot be taken back: the replacement is a new text part.
            AnswerEvent::Reset => {
                self.close_text(out);
                self.answered = false;
                data(
                    out,
                    &json!({"type": "data-reagent-answer_reset", "data": {}}),
                );
            }
            AnswerEvent::Done { content, .. } => {
                if !self.answered {
                    self.text_delta(out, &content);
                }
                self.close_text(out);
            }
            AnswerEvent::Start { .. } | AnswerEvent::Delta { .. } => {}
        }
    }

    fn tool(&self, kind: &str, call_id: &str) -> Value {
        json!({"type": kind, "toolCallId": call_id, "providerExecuted": true, "dynamic": true})
    }

    /// The chunks of one `step` event; true when it ends the stream (an approval).
    fn step(&mut self, out: &mut String, ev: &LoggedEvent, step: StepEvent) -> bool {
        match step {
            StepEvent::Thinking { reasoning, .. } if !reasoning.trim().is_empty() => {
                let id = format!("reasoning-{}", ev.id);
                data(out, &json!({"type": "reasoning-start", "id": id}));
                data(
                    out,
                    &json!({"type": "reasoning-delta", "id": id, "delta": reasoning}),
                );
                data(out, &json!({"type": "reasoning-end", "id": id}));
            }
            StepEvent::Thinking { .. } => {}
            StepEvent::ToolStart {
                call_id,
                tool,
                arguments,
                ..
            } => self.tool_start(out, call_id, tool, arguments),
            StepEvent::ToolEnd {
                call_id,
                observation,
                error,
                blocked,
                ..
            } => self.tool_end(out, &call_id, observation, error, blocked),
            StepEvent::ApprovalRequired { approval_id, .. }
                if self
                    .open
                    .as_ref()
                    .is_some_and(|o| !o.contains(&approval_id)) => {}
            StepEvent::ApprovalRequired {
                approval_id, tool, ..
            } => {
                self.approval(out, approval_id, &tool);
                return true;
            }
            StepEvent::CallerToolCalls { calls, .. } => caller_calls(out, calls),
            StepEvent::DagStep { ref step_id, .. } => {
                let id = step_id.clone();
                let value = stored(ev);
                data(
                    out,
                    &json!({"type": "data-reagent-dag_step", "id": id, "data": value}),
                );
            }
            _ => {
                let value = stored(ev);
                let name = value["type"].as_str().unwrap_or("step").to_string();
                data(
                    out,
                    &json!({"type": format!("data-reagent-{name}"), "data": value}),
                );
            }
        }
        false
    }

    fn tool_start(&mut self, out: &mut String, call_id: String, tool: String, arguments: Value) {
        let mut start = self.tool("tool-input-start", &call_id);
        start["toolName"] = json!(tool);
        data(out, &start);
        let mut available = self.tool("tool-input-available", &call_id);
        available["toolName"] = json!(tool);
        available["input"] = arguments;
        data(out, &available);
        self.calls.push((call_id, tool));
    }

    fn tool_end(
        &mut self,
        out: &mut String,
        call_id: &str,
        observation: String,
        error: bool,
        blocked: bool,
    ) {
        self.calls.retain(|(c, _)| c != call_id);
        let chunk = if blocked && (self.resumed || self.asked.contains(call_id)) {
            json!({"type": "tool-output-denied", "toolCallId": call_id})
        } else if error || blocked {
            let mut c = self.tool("tool-output-error", call_id);
            c["errorText"] = json!(observation);
            c
        } else {
            let mut c = self.tool("tool-output-available", call_id);
            c["output"] = json!(observation);
            c
        };
        data(out, &chunk);
    }

    /// A pending approval ends the stream: the client answers it in its next request.
    fn approval(&mut self, out: &mut String, approval_id: String, tool: &str) {
        let call = self.calls.iter().rev().find(|(_, t)| t == tool);
        let call_id = call.map_or_else(|| approval_id.clone(), |(c, _)| c.clone());
        self.asked.insert(call_id.clone());
        self.close_text(out);
        data(
            out,
            &json!({"type": "tool-approval-request", "approvalId": approval_id, "toolCallId": call_id}),
        );
        data(out, &json!({"type": "finish-step"}));
        data(out, &json!({"type": "finish"}));
        out.push_str(DONE);
    }

    fn done(&mut self, out: &mut String, outcome: Result<RunOutcome, serde_json::Error>) {
        let (reason, status) = match outcome {
            Ok(outcome) if outcome.status == RunStatus::Failed => {
                self.close_text(out);
                let text = outcome.error.unwrap_or(outcome.answer);
                data(out, &json!({"type": "error", "errorText": text}));
                ("error", RunStatus::Failed)
            }
            Ok(outcome) => {
                let silent = [RunStatus::Cancelled, RunStatus::RequiresAction];
                if !self.answered && !silent.contains(&outcome.status) {
                    self.text_delta(out, &outcome.answer);
                }
                self.close_text(out);
                let reason = match outcome.status {
                    RunStatus::MaxIterations => "length",
                    RunStatus::RequiresAction => "tool-calls",
                    RunStatus::Cancelled => "other",
                    _ => "stop",
                };
                (reason, outcome.status)
            }
            Err(e) => {
                self.close_text(out);
                let text = format!("unreadable done event: {e}");
                data(out, &json!({"type": "error", "errorText": text}));
                ("error", RunStatus::Failed)
            }
        };
        data(out, &json!({"type": "finish-step"}));
        data(
            out,
            &json!({"type": "finish", "finishReason": reason,
                    "messageMetadata": {"runId": self.run, "status": status.as_str()}}),
        );
        out.push_str(DONE);
    }
}

/// Caller tool calls: not provider-executed, so the client runs them (`onToolCall`).
fn caller_calls(out: &mut String, calls: Vec<CallerCall>) {
    for c in calls {
        let input: Value = serde_json::from_str(&c.arguments).unwrap_or(Value::String(c.arguments));
        data(
            out,
            &json!({"type": "tool-input-start", "toolCallId": c.call_id,
                    "toolName": c.name, "dynamic": true}),
        );
        data(
            out,
            &json!({"type": "tool-input-available", "toolCallId": c.call_id,
                    "toolName": c.name, "input": input, "dynamic": true}),
        );
    }
}

impl Encoder for AiSdk {
    fn event(&mut self, ev: &LoggedEvent, out: &mut String) -> bool {
        match ev.view() {
            EventView::AnswerDelta(text) => self.text_delta(out, &text),
            EventView::Agent(AgentEvent::Answer(answer)) => self.answer(out, answer),
            EventView::Agent(AgentEvent::Step(step)) => return self.step(out, ev, step),
            EventView::Agent(AgentEvent::Done(outcome)) => {
                self.done(out, Ok(outcome));
                return true;
            }
            EventView::Unreadable(EventName::Done, e) => {
                self.done(out, Err(e));
                return true;
            }
            // Passed on as stored, whether or not it reads.
            EventView::Agent(AgentEvent::Compact(_))
            | EventView::Unreadable(EventName::Compact, _) => {
                data(
                    out,
                    &json!({"type": "data-reagent-compact", "data": stored(ev)}),
                );
            }
            EventView::Agent(AgentEvent::Start(_)) | EventView::Unreadable(..) => {}
        }
        false
    }

    fn cut_short(&mut self, out: &mut String) {
        self.close_text(out);
        data(
            out,
            &json!({"type": "error", "errorText": "the run's events ended without its outcome"}),
        );
        data(out, &json!({"type": "finish", "finishReason": "error"}));
        out.push_str(DONE);
    }
}
