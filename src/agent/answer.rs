//! The answer as the client sees it, and the rules that decide which reply of the loop is the
//! answer (docs/configuration.md `synthesis`).
//!
//! Under `auto` and `never` the loop's calls stream: a reply that may be the answer (native
//! mode: text, no tool call so far; JSON mode: the `answer` string of a `final_answer` action,
//! decoded as it comes, see [`JsonAnswer`]) reaches the client as `answer` deltas while it is
//! written ([`ReplyText`] decides how much of it is safe to show, [`AnswerStream`] sends it).
//! The reply that ends the loop is the answer, with no synthesis call, when it passes the
//! answer checks ([`problem`]); a reply to a safeguard's prompt that is only a verdict on the
//! work ([`is_verdict`]) never is.

use super::events::{AgentEvent, AnswerEvent, AnswerSource, EventSink, Mode};
use super::synthesis::{is_call_dump, AnswerSoFar};
use crate::llm::Continuity;

mod gate;
mod json_answer;
mod verdict;

pub use gate::Gate;
pub use json_answer::JsonAnswer;
pub use verdict::is_verdict;

/// The `answer` events of a run so far: whether an answer is open and the text it streamed.
#[derive(Clone, Debug)]
pub struct AnswerStream {
    events: EventSink,
    /// `start` was sent and neither `reset` nor `done` since.
    open: bool,
    /// The text the open answer streamed.
    text: String,
}

impl AnswerStream {
    pub fn new(events: EventSink) -> Self {
        Self {
            events,
            open: false,
            text: String::new(),
        }
    }

    fn send(&self, e: AnswerEvent) {
        self.events.send(AgentEvent::Answer(e));
    }

    fn open(&mut self, source: AnswerSource) {
        if !self.open {
            self.send(AnswerEvent::start(source));
            self.open = true;
        }
    }

    /// Streams `text` as part of an answer from `source`, opening it first.
    pub fn delta(&mut self, source: AnswerSource, text: &str) {
        if text.is_empty() {
            return;
        }
        self.open(source);
        self.text.push_str(text);
        self.send(AnswerEvent::Delta {
            content: text.to_string(),
        });
    }

    /// Takes back the open answer (`reset` when it streamed text); returns that text.
    pub fn reset(&mut self) -> String {
        if self.open && !self.text.is_empty() {
            self.send(AnswerEvent::Reset);
        }
        self.open = false;
        std::mem::take(&mut self.text)
    }

    /// The text the open answer streamed (empty when none is open).
    pub fn streamed(&self) -> &str {
        &self.text
    }

    /// How much of an answer the client holds, for a fallback text that replaces it.
    pub fn so_far(&self) -> AnswerSoFar {
        match (self.open, self.text.is_empty()) {
            (false, _) => AnswerSoFar::NotStarted,
            (true, true) => AnswerSoFar::Started,
            (true, false) => AnswerSoFar::Partial,
        }
    }

    /// Ends the answer with `full`: what was streamed stays when `full` goes on from it (the
    /// rest follows as one delta); otherwise it is reset and `full` streams whole.
    pub fn finish(&mut self, source: AnswerSource, full: &str, fallback: bool) {
        if !full.starts_with(self.text.as_str()) {
            self.reset();
        }
        self.open(source);
        let rest = full[self.text.len()..].to_string();
        self.delta(source, &rest);
        self.send(AnswerEvent::Done {
            content: full.to_string(),
            fallback,
        });
        self.open = false;
        self.text.clear();
    }
}

/// What the loop leaves for the answer phase when its replies streamed.
#[derive(Clone, Debug)]
pub struct LoopAnswer {
    /// The answer events the client has seen.
    pub stream: AnswerStream,
    /// The reply that ended the loop, when it passed the answer checks: it is the answer.
    pub accepted: Option<String>,
    /// What the provider sent with the accepted reply beyond its text.
    pub continuity: Option<Continuity>,
    /// The brief answer is the model's last reply (not a text built from the tool results).
    pub brief_is_reply: bool,
}

/// Why a reply cannot be the answer as it is; `None` when it passes the answer checks.
pub fn problem(text: &str, finish_reason: Option<&str>) -> Option<&'static str> {
    if text.trim().is_empty() {
        Some("empty")
    } else if matches!(finish_reason, Some("length" | "max_tokens")) {
        Some("cut by the output limit")
    } else if is_call_dump(text) {
        Some("a tool call written as text")
    } else {
        None
    }
}

/// The part of a streamed reply that may be the answer, and how much of it is safe to show
/// yet: native mode's text, or JSON mode's decoded `answer` string, through a [`Gate`].
#[derive(Debug)]
pub struct ReplyText {
    json: Option<JsonAnswer>,
    gate: Gate,
}

impl ReplyText {
    pub fn new(mode: Mode) -> Self {
        Self {
            json: (mode == Mode::Json).then(JsonAnswer::default),
            gate: Gate::default(),
        }
    }

    /// Takes the next piece of the reply's content; returns what may be shown now.
    pub fn push(&mut self, content: &str) -> &str {
        match &mut self.json {
            None => self.gate.push(content),
            Some(json) => {
                let decoded = json.push(content);
                self.gate.push(&decoded)
            }
        }
    }
}

#[cfg(test)]
mod tests;
