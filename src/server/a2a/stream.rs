//! A run's events as A2A stream results (docs/protocols.md): the answer as chunks of the task's
//! one text artifact, tool steps and thinking as `working` status updates whose message holds
//! a sentence and the step's data, a pending approval as `input-required` (the stream ends
//! there: the client answers with a message in the same task), the run's end as `completed`,
//! `failed` or `canceled`. The same encoder, fed without a stream, is the final task of a
//! non-streaming send.

use serde_json::{json, Value};

use super::rpc::{frame, result, Wire};
use super::wire::{Ids, Shapes, State, ANSWER_ARTIFACT};
use crate::agent::events::{AgentEvent, AnswerEvent, EventView, StepEvent};
use crate::agent::RunOutcome;
use crate::domain::{EventName, RunStatus};
use crate::runs::LoggedEvent;
use crate::server::event_body::Encoder;

/// One task's events on one wire.
pub struct TaskStream {
    shapes: Shapes,
    rpc_id: Value,
    pub ids: Ids,
    /// The answer so far (the current artifact's text).
    answer: String,
    /// Whether a chunk of the current answer was sent.
    started: bool,
    /// Whether its last chunk was sent.
    closed: bool,
    /// How the stream ended: the state and its status message.
    pub end: Option<(State, Option<Value>)>,
    chunk_frame: Option<ChunkFrame>,
}

/// The text of an artifact chunk's frame around its text: `head`, the text as a JSON string,
/// then the flags and `tail`.
struct ChunkFrame {
    head: String,
    tail: &'static str,
}

impl ChunkFrame {
    /// The frame of `Shapes::artifact_update` inside a JSON-RPC result, written out by hand
    /// (the tests check that both read as the same object).
    fn new(shapes: Shapes, rpc_id: &Value, ids: &Ids) -> Self {
        let quote = |s: &str| serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into());
        let (kind, text_kind, tail) = match shapes.0 {
            Wire::V1 => ("{\"artifactUpdate\":{", "", "}}}"),
            Wire::V03 => ("{\"kind\":\"artifact-update\",", "\"kind\":\"text\",", "}}"),
        };
        let head = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{},\"result\":{kind}\"taskId\":{},\"contextId\":{},\
             \"artifact\":{{\"artifactId\":\"{ANSWER_ARTIFACT}\",\"name\":\"{ANSWER_ARTIFACT}\",\
             \"parts\":[{{{text_kind}\"text\":",
            rpc_id,
            quote(&ids.task),
            quote(&ids.context),
        );
        Self { head, tail }
    }

    fn write(&self, out: &mut String, event_id: u64, text: &str, append: bool, last: bool) {
        out.push_str("id: ");
        out.push_str(&event_id.to_string());
        out.push_str("\ndata: ");
        out.push_str(&self.head);
        let quoted = serde_json::to_string(text).unwrap_or_else(|_| "\"\"".into());
        out.push_str(&quoted);
        out.push_str("}]},\"append\":");
        out.push_str(if append { "true" } else { "false" });
        out.push_str(",\"lastChunk\":");
        out.push_str(if last { "true" } else { "false" });
        out.push_str(self.tail);
        out.push_str("\n\n");
    }
}

impl TaskStream {
    pub fn new(wire: Wire, rpc_id: Value, ids: Ids) -> Self {
        Self {
            shapes: Shapes(wire),
            rpc_id,
            ids,
            answer: String::new(),
            started: false,
            closed: false,
            end: None,
            chunk_frame: None,
        }
    }

    /// The task as it stands: its status, the answer artifact once there is text, `history`.
    pub fn task(&self, state: State, message: Option<Value>, history: Vec<Value>) -> Value {
        let artifacts = if self.answer.is_empty() {
            Vec::new()
        } else {
            vec![self.shapes.answer(&self.answer)]
        };
        let status = self.shapes.status(state, message);
        self.shapes.task(&self.ids, status, artifacts, history)
    }

    /// The stream's first result: the task, `state`, with the client's message.
    pub fn first(&self, state: State, history: Vec<Value>) -> String {
        let mut out = String::new();
        let task = self.shapes.task_result(self.task(state, None, history));
        frame(&mut out, None, &result(&self.rpc_id, task));
        out
    }

    fn send(&self, out: &mut String, ev: &LoggedEvent, value: Value) {
        frame(out, Some(ev.id), &result(&self.rpc_id, value));
    }

    /// An agent message of this task: `text`, with `data` when there is some.
    fn agent_message(&self, ev: &LoggedEvent, text: &str, data: Option<Value>) -> Value {
        let mut parts = vec![self.shapes.text_part(text)];
        if let Some(data) = data {
            parts.push(self.shapes.data_part(data));
        }
        let id = format!("{}-{}", self.ids.task, ev.id);
        self.shapes.message(&id, false, parts, &self.ids)
    }

    fn status(&mut self, out: &mut String, ev: &LoggedEvent, state: State, message: Option<Value>) {
        let last = state.ends_stream();
        let status = self.shapes.status(state, message.clone());
        let update = self.shapes.status_update(&self.ids, status, last);
        self.send(out, ev, update);
        if last {
            self.end = Some((state, message));
        }
    }

    /// One chunk of the answer artifact. Written directly, one per token: the frame around
    /// the text is made once per stream ([`ChunkFrame`]), no `Value` per token.
    fn chunk(&mut self, out: &mut String, ev: &LoggedEvent, text: &str, last: bool) {
        let frame = self
            .chunk_frame
            .get_or_insert_with(|| ChunkFrame::new(self.shapes, &self.rpc_id, &self.ids));
        frame.write(out, ev.id, text, self.started, last);
        self.started = true;
        self.closed = last;
    }

    fn delta(&mut self, out: &mut String, ev: &LoggedEvent, text: &str) {
        if text.is_empty() {
            return;
        }
        self.answer.push_str(text);
        self.chunk(out, ev, text, false);
    }

    fn answer_event(&mut self, out: &mut String, ev: &LoggedEvent, answer: AnswerEvent) {
        match answer {
            AnswerEvent::Start { .. } | AnswerEvent::Delta { .. } => {}
            // The next chunk replaces what was sent (`append: false`).
            AnswerEvent::Reset => {
                self.answer.clear();
                self.started = false;
                self.closed = false;
            }
            AnswerEvent::Done { content, .. } => {
                let rest = if self.started { "" } else { content.as_str() };
                self.chunk(out, ev, rest, true);
                self.answer = content;
            }
        }
    }

    /// A step as a status update; true when it ends the stream (an approval).
    fn step(&mut self, out: &mut String, ev: &LoggedEvent, step: StepEvent) -> bool {
        let data: Value = serde_json::from_str(&ev.data).unwrap_or(Value::Null);
        let (state, text) = match &step {
            StepEvent::ApprovalRequired { tool, arguments, .. } => (
                State::InputRequired,
                format!(
                    "Approve the call to {tool} with {arguments}? Answer in this task with yes or no \
                     (or a data part {{\"approved\": true|false, \"reason\": \"…\"}})."
                ),
            ),
            StepEvent::ToolStart { tool, arguments, .. } => {
                (State::Working, format!("Calling {tool} with {arguments}"))
            }
            StepEvent::ToolEnd { tool, observation, .. } => {
                (State::Working, format!("{tool} returned: {observation}"))
            }
            StepEvent::Thinking { reasoning, .. } if !reasoning.trim().is_empty() => {
                (State::Working, reasoning.clone())
            }
            _ => (State::Working, data["type"].as_str().unwrap_or("step").to_string()),
        };
        let message = self.agent_message(ev, &text, Some(data));
        self.status(out, ev, state, Some(message));
        state == State::InputRequired
    }

    fn done(&mut self, out: &mut String, ev: &LoggedEvent, outcome: RunOutcome) {
        let state = State::of(outcome.status);
        let message = match outcome.status {
            RunStatus::Failed => {
                let text = outcome.error.as_deref().unwrap_or(&outcome.answer);
                Some(self.agent_message(ev, text, None))
            }
            RunStatus::Cancelled => Some(self.agent_message(ev, "The task was canceled.", None)),
            RunStatus::RequiresAction => {
                let data = json!({"required_action": outcome.required_action});
                let text = "The run waits for the outputs of caller tools.";
                Some(self.agent_message(ev, text, Some(data)))
            }
            _ => {
                if !self.closed && !outcome.answer.is_empty() {
                    let rest = if self.started {
                        String::new()
                    } else {
                        outcome.answer.clone()
                    };
                    self.chunk(out, ev, &rest, true);
                    self.answer = outcome.answer;
                }
                None
            }
        };
        self.status(out, ev, state, message);
    }
}

impl Encoder for TaskStream {
    fn event(&mut self, ev: &LoggedEvent, out: &mut String) -> bool {
        match ev.view() {
            EventView::AnswerDelta(text) => self.delta(out, ev, &text),
            EventView::Agent(AgentEvent::Answer(answer)) => self.answer_event(out, ev, answer),
            EventView::Agent(AgentEvent::Step(step)) => return self.step(out, ev, step),
            EventView::Agent(AgentEvent::Start(_)) => self.status(out, ev, State::Working, None),
            EventView::Agent(AgentEvent::Done(outcome)) => {
                self.done(out, ev, outcome);
                return true;
            }
            EventView::Unreadable(EventName::Done, e) => {
                let text = format!("the run's end could not be read: {e}");
                let message = self.agent_message(ev, &text, None);
                self.status(out, ev, State::Failed, Some(message));
                return true;
            }
            EventView::Agent(AgentEvent::Compact(_)) | EventView::Unreadable(..) => {}
        }
        false
    }

    /// The events ended early (a read failed): an error, so the client resubscribes.
    fn cut_short(&mut self, out: &mut String) {
        let error = super::rpc::RpcError::new(
            super::rpc::INTERNAL_ERROR,
            "the task's events ended before its end: resubscribe to go on",
        );
        let wire = self.shapes.0;
        frame(out, None, &super::rpc::error(&self.rpc_id, wire, &error));
    }
}
