//! The Responses encoder (docs/protocols.md): a run's event log, in id order, becomes the
//! Responses event stream and the response object. It is a pure function of the log: the
//! stream of a live run, the replay of a finished one and a resume on another instance
//! (`starting_after`) number their events identically.
//!
//! Sequence numbers: `response.created` is 0 and `response.in_progress` 1, then each run event
//! yields at most [`FRAMES_PER_EVENT`] events, numbered on. Run event ids are contiguous except
//! after a takeover or restart (docs/deployment.md), where they jump above any id the previous
//! owner could have sent; there the sequence jumps to `2 + FRAMES_PER_EVENT × (id − 1)`, above
//! any number the previous owner could have sent, so no number ever names two events.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{json, Value};

use super::object::{
    arguments_text, end_tool_item, ending, in_progress, message_item, response, text_part,
    tool_item, Context, Ending,
};
use crate::agent::events::{AgentEvent, AnswerEvent, EventView, StepEvent};
use crate::agent::RunOutcome;
use crate::domain::EventName;
use crate::runs::LoggedEvent;

/// The most stream events one run event yields: a run's `done` that must still open, fill and
/// close the answer, then fail, yields 8; caller tool calls 4 each, so this holds for up to 25
/// caller tool calls in one model reply.
pub const FRAMES_PER_EVENT: u64 = 100;
/// `response.created` and `response.in_progress`.
const PREFIX: u64 = 2;

/// One stream event: its number, its `type` and its JSON.
#[derive(Clone, Debug, PartialEq)]
pub struct Frame {
    pub seq: u64,
    pub kind: &'static str,
    pub data: String,
}

impl Frame {
    /// `event: <type>` and `data: <json>`, with no `id:` line.
    pub fn write_to(&self, out: &mut String) {
        out.push_str("event: ");
        out.push_str(self.kind);
        out.push_str("\ndata: ");
        out.push_str(&self.data);
        out.push_str("\n\n");
    }
}

/// The answer's message item while it is open.
#[derive(Debug)]
struct OpenMessage {
    index: usize,
    id: String,
    text: String,
}

/// The encoder's state after the events it has read.
#[derive(Debug)]
pub struct Encoder {
    ctx: Arc<Context>,
    next_seq: u64,
    last_id: u64,
    output: Vec<Value>,
    message: Option<OpenMessage>,
    /// Whether the answer's message item was closed.
    answered: bool,
    tools: HashMap<String, usize>,
    ending: Option<Ending>,
}

impl Encoder {
    pub fn new(ctx: Arc<Context>) -> Self {
        Self {
            ctx,
            next_seq: PREFIX,
            last_id: 0,
            output: Vec::new(),
            message: None,
            answered: false,
            tools: HashMap::new(),
            ending: None,
        }
    }

    /// `response.created` and `response.in_progress` (0 and 1).
    pub fn prefix(&self) -> Vec<Frame> {
        let snapshot = response(&self.ctx, &in_progress(), &[]);
        ["response.created", "response.in_progress"]
            .into_iter()
            .enumerate()
            .map(|(seq, kind)| {
                let data = json!({"type": kind, "sequence_number": seq, "response": snapshot});
                Frame {
                    seq: seq as u64,
                    kind,
                    data: data.to_string(),
                }
            })
            .collect()
    }

    /// Whether the run's `done` was read.
    pub fn finished(&self) -> bool {
        self.ending.is_some()
    }

    /// The response object as of the events read.
    pub fn response(&self) -> Value {
        match &self.ending {
            Some(ending) => response(&self.ctx, ending, &self.output),
            None => response(&self.ctx, &in_progress(), &self.snapshot_output()),
        }
    }

    /// The stream events of one run event.
    pub fn event(&mut self, ev: &LoggedEvent) -> Vec<Frame> {
        if ev.id > self.last_id + 1 {
            self.next_seq = self.next_seq.max(PREFIX + FRAMES_PER_EVENT * (ev.id - 1));
        }
        self.last_id = self.last_id.max(ev.id);
        let mut out = Frames {
            next: self.next_seq,
            frames: Vec::new(),
        };
        if self.ending.is_none() {
            match ev.view() {
                EventView::AnswerDelta(text) => self.answer_delta(&text, &mut out),
                EventView::Agent(AgentEvent::Step(step)) => self.step(step, &mut out),
                EventView::Agent(AgentEvent::Answer(answer)) => self.answer(answer, &mut out),
                EventView::Agent(AgentEvent::Done(outcome)) => self.done(Some(outcome), &mut out),
                EventView::Unreadable(EventName::Done, _) => self.done(None, &mut out),
                _ => {}
            }
        }
        self.next_seq = out.next;
        out.frames
    }

    fn step(&mut self, step: StepEvent, out: &mut Frames) {
        match step {
            StepEvent::ToolStart {
                call_id,
                tool,
                arguments,
                ..
            } => {
                let item = tool_item(&call_id, &tool, &arguments);
                let index = self.output.len();
                self.output.push(item.clone());
                self.tools.insert(call_id, index);
                out.item_added(index, item);
            }
            StepEvent::ToolEnd {
                call_id,
                tool,
                observation,
                error,
                blocked,
                ..
            } => {
                let index = match self.tools.remove(&call_id) {
                    Some(index) => index,
                    None => {
                        let item = tool_item(&call_id, &tool, &Value::Null);
                        self.output.push(item.clone());
                        out.item_added(self.output.len() - 1, item);
                        self.output.len() - 1
                    }
                };
                let item = &mut self.output[index];
                end_tool_item(item, observation, error || blocked);
                out.item_done(index, item.clone());
            }
            StepEvent::CallerToolCalls { calls, .. } => {
                for call in calls {
                    self.caller_call(&call.call_id, &call.name, &call.arguments, out);
                }
            }
            StepEvent::ApprovalRequired {
                approval_id,
                tool,
                arguments,
                ..
            } => {
                let item = json!({
                    "type": "reagent:approval_request",
                    "id": format!("apr_{approval_id}"),
                    "status": "completed",
                    "approval_id": approval_id,
                    "name": tool,
                    "arguments": arguments_text(&arguments),
                    "content": [],
                });
                self.output.push(item.clone());
                let index = self.output.len() - 1;
                out.item_added(index, item.clone());
                out.item_done(index, item);
            }
            _ => {}
        }
    }

    fn answer_delta(&mut self, content: &str, out: &mut Frames) {
        if !content.is_empty() && !self.answered {
            self.delta(content, out)
        }
    }

    /// An answer event other than a delta.
    fn answer(&mut self, answer: AnswerEvent, out: &mut Frames) {
        match answer {
            // Sent text cannot be taken back: it stays a message of its own (as a model's text
            // before its tool calls does), and the answer that follows opens a new one.
            AnswerEvent::Reset if self.message.as_ref().is_some_and(|m| !m.text.is_empty()) => {
                self.close_message(out);
                self.answered = false;
            }
            AnswerEvent::Done { content, .. }
                if !self.answered && (self.message.is_some() || !content.is_empty()) =>
            {
                self.finish_text(&content, out);
                self.close_message(out);
            }
            _ => {}
        }
    }

    fn done(&mut self, outcome: Option<RunOutcome>, out: &mut Frames) {
        if let Some(o) = &outcome {
            if !self.answered && (self.message.is_some() || !o.answer.is_empty()) {
                self.finish_text(&o.answer, out);
                self.close_message(out);
            }
        }
        // Tool calls the run never ended (none expected) stay as they were streamed.
        let ending = ending(&self.ctx, outcome.as_ref());
        let kind = match ending.status {
            "completed" => "response.completed",
            "failed" => {
                let message = ending.error.clone().unwrap_or_default();
                // Open Responses nests the error; OpenAI's SDKs read it flat: both are sent.
                let error = json!({"type": "server_error", "code": "server_error", "message": message, "param": null});
                out.push(
                    "error",
                    json!({"code": "server_error", "message": message, "param": null, "error": error}),
                );
                "response.failed"
            }
            _ => "response.incomplete",
        };
        let final_response = response(&self.ctx, &ending, &self.output);
        out.push(kind, json!({"response": final_response}));
        self.ending = Some(ending);
    }

    /// A caller tool call: a `function_call` item, its arguments in one delta, done.
    fn caller_call(&mut self, call_id: &str, name: &str, arguments: &str, out: &mut Frames) {
        let index = self.output.len();
        let id = format!("fc_{call_id}");
        let item = |status: &str| {
            json!({"type": "function_call", "id": id, "call_id": call_id, "name": name,
                   "arguments": arguments, "status": status})
        };
        self.output.push(item("completed"));
        out.item_added(index, item("in_progress"));
        out.push(
            "response.function_call_arguments.delta",
            json!({"item_id": id, "output_index": index, "delta": arguments}),
        );
        out.push(
            "response.function_call_arguments.done",
            json!({"item_id": id, "output_index": index, "arguments": arguments, "name": name}),
        );
        out.item_done(index, item("completed"));
    }

    /// Makes the message's text `full` where it is a continuation of what was sent.
    fn finish_text(&mut self, full: &str, out: &mut Frames) {
        let sent = self.message.as_ref().map_or("", |m| m.text.as_str());
        if let Some(rest) = full.strip_prefix(sent) {
            if !rest.is_empty() {
                let rest = rest.to_string();
                self.delta(&rest, out);
            }
        }
        if self.message.is_none() {
            self.open_message(out);
        }
    }

    fn open_message(&mut self, out: &mut Frames) {
        let index = self.output.len();
        let id = format!("msg_{}_{index}", self.ctx.run_id.simple());
        let item = message_item(&id, "in_progress", None);
        self.output.push(item.clone());
        out.item_added(index, item);
        out.push(
            "response.content_part.added",
            json!({"item_id": id, "output_index": index, "content_index": 0, "part": text_part("")}),
        );
        self.message = Some(OpenMessage {
            index,
            id,
            text: String::new(),
        });
    }

    fn delta(&mut self, text: &str, out: &mut Frames) {
        if self.message.is_none() {
            self.open_message(out);
        }
        let Some(m) = self.message.as_mut() else {
            return;
        };
        m.text.push_str(text);
        out.delta(&m.id, m.index, text);
    }

    fn close_message(&mut self, out: &mut Frames) {
        let Some(m) = self.message.take() else { return };
        let (id, index) = (m.id.as_str(), m.index);
        out.push(
            "response.output_text.done",
            json!({"item_id": id, "output_index": index, "content_index": 0, "text": m.text, "logprobs": []}),
        );
        out.push(
            "response.content_part.done",
            json!({"item_id": id, "output_index": index, "content_index": 0, "part": text_part(&m.text)}),
        );
        let item = message_item(id, "completed", Some(&m.text));
        self.output[index] = item.clone();
        out.item_done(index, item);
        self.answered = true;
    }

    /// The output so far, the open message with its text so far.
    fn snapshot_output(&self) -> Vec<Value> {
        let mut output = self.output.clone();
        if let Some(m) = &self.message {
            output[m.index] = message_item(&m.id, "in_progress", Some(&m.text));
        }
        output
    }
}

/// Frames being numbered.
struct Frames {
    next: u64,
    frames: Vec<Frame>,
}

impl Frames {
    fn push(&mut self, kind: &'static str, mut body: Value) {
        if let Value::Object(map) = &mut body {
            map.insert("type".into(), kind.into());
            map.insert("sequence_number".into(), self.next.into());
        }
        self.frames.push(Frame {
            seq: self.next,
            kind,
            data: body.to_string(),
        });
        self.next += 1;
    }

    fn item_added(&mut self, index: usize, item: Value) {
        self.push(
            "response.output_item.added",
            json!({"output_index": index, "item": item}),
        );
    }

    fn item_done(&mut self, index: usize, item: Value) {
        self.push(
            "response.output_item.done",
            json!({"output_index": index, "item": item}),
        );
    }

    /// One answer token: written directly, without a `Value` tree.
    fn delta(&mut self, item_id: &str, index: usize, text: &str) {
        let quote = |s: &str| serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into());
        let data = format!(
            "{{\"type\":\"response.output_text.delta\",\"sequence_number\":{},\"item_id\":{},\
             \"output_index\":{index},\"content_index\":0,\"delta\":{},\"logprobs\":[]}}",
            self.next,
            quote(item_id),
            quote(text),
        );
        self.frames.push(Frame {
            seq: self.next,
            kind: "response.output_text.delta",
            data,
        });
        self.next += 1;
    }
}

#[cfg(test)]
mod tests;
