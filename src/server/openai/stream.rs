//! The streamed answer: a run's events as `data: <chat.completion.chunk>` lines (docs/protocols.md) —
//! a first chunk with `role: "assistant"`, tool calls and results as one
//! `delta.reasoning_content` line each (cut to 200 characters; never `delta.tool_calls`, which a
//! client would try to execute — only the caller's own tools' calls are), answer deltas as `delta.content`, a last chunk with
//! `finish_reason`, the usage chunk when asked, then `data: [DONE]`. Quiet stretches get
//! comment lines (`: keep-alive`), which the SDKs skip. Dropping the body — the client went
//! away — cancels the run.

use std::sync::Arc;

use axum::response::Response;
use serde_json::{json, Value};

use super::reply::{finish_reason, tool_calls_json, usage_json, Meta};
use crate::agent::events::{AgentEvent, AnswerEvent, EventView, SafeguardKind, StepEvent};
use crate::agent::RunOutcome;
use crate::domain::EventName;
use crate::runs::{LiveRun, LoggedEvent};
use crate::server::event_body::{event_stream, Encoder};
use crate::server::state::AppState;

/// The longest reasoning line, in characters.
const LINE_CHARS: usize = 200;
const DONE: &str = "data: [DONE]\n\n";

/// Cancels the run when dropped before [`CancelOnDrop::disarm`]: a client that disconnects
/// from a `/v1` request cancels its run (OpenAI semantics).
pub struct CancelOnDrop {
    live: Arc<LiveRun>,
    armed: bool,
}

impl CancelOnDrop {
    pub fn new(live: Arc<LiveRun>) -> Self {
        Self { live, armed: true }
    }
    pub fn disarm(&mut self) {
        self.armed = false;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if self.armed {
            tracing::info!(run_id = %self.live.id, "the /v1 client went away: cancelling its run");
            self.live.cancel.cancel();
        }
    }
}

/// What the stream has sent so far.
struct Progress {
    meta: Meta,
    include_usage: bool,
    /// The answer text sent as `content`.
    sent: String,
}

/// The stream's encoder: the chunks of each event, `[DONE]` last; the guard is disarmed once
/// the stream is complete.
struct Chunks {
    progress: Progress,
    guard: CancelOnDrop,
}

impl Encoder for Chunks {
    fn event(&mut self, ev: &LoggedEvent, out: &mut String) -> bool {
        let (text, done) = self.progress.frames(ev);
        out.push_str(&text);
        if done {
            self.guard.disarm();
        }
        done
    }

    /// The log ended without `done` (never expected): end the stream properly.
    fn cut_short(&mut self, out: &mut String) {
        out.push_str(DONE);
        self.guard.disarm();
    }
}

/// The streaming response of the run.
pub fn chunk_stream(
    state: &AppState,
    live: Arc<LiveRun>,
    meta: Meta,
    include_usage: bool,
) -> Response {
    let progress = Progress {
        meta,
        include_usage,
        sent: String::new(),
    };
    let first = data(&progress.chunk(json!({"role": "assistant", "content": ""}), None));
    let events = state.runs.live_events(&live, 0);
    let encoder = Chunks {
        progress,
        guard: CancelOnDrop::new(live),
    };
    let subscriber = state.metrics.sse_subscriber();
    event_stream(first, events, encoder, state.keep_alive, subscriber)
}

fn data(v: &Value) -> String {
    format!("data: {v}\n\n")
}

/// `text` cut to [`LINE_CHARS`] characters, on one line.
fn line(text: &str) -> String {
    let one: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut cut: String = one.chars().take(LINE_CHARS).collect();
    if one.chars().count() > LINE_CHARS {
        cut.pop();
        cut.push('…');
    }
    cut.push('\n');
    cut
}

/// What a safeguard did, said as the UI says it (what it told the model stays internal).
fn safeguard_line(kind: SafeguardKind, tool: Option<&str>) -> String {
    match kind {
        SafeguardKind::Reflection => {
            "safeguard: the agent was asked to step back and check its progress".into()
        }
        SafeguardKind::CycleWarning => format!(
            "safeguard: the agent was warned that it is repeating {}",
            tool.unwrap_or("a call")
        ),
        SafeguardKind::CompletionCheck => {
            "safeguard: the agent was asked to check that its answer is complete".into()
        }
        SafeguardKind::MaxIterations => {
            "safeguard: the iteration limit was reached; answering with what was found".into()
        }
        SafeguardKind::CycleStop => {
            "safeguard: the agent only repeated calls it was warned about; answering with what \
             was found"
                .into()
        }
    }
}

impl Progress {
    fn chunk(&self, delta: Value, finish: Option<&str>) -> Value {
        json!({
            "id": self.meta.id,
            "object": "chat.completion.chunk",
            "created": self.meta.created,
            "model": self.meta.model,
            "system_fingerprint": null,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": null}],
        })
    }

    /// `data: <chunk>` with `delta: {field: text}`, written directly: one per answer token,
    /// so no intermediate `Value` tree.
    fn text_chunk(&self, field: &str, text: &str) -> String {
        let quote = |s: &str| serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into());
        format!(
            "data: {{\"id\":{},\"object\":\"chat.completion.chunk\",\"created\":{},\"model\":{},\
             \"system_fingerprint\":null,\"choices\":[{{\"index\":0,\"delta\":{{\"{field}\":{}}},\
             \"finish_reason\":null,\"logprobs\":null}}]}}\n\n",
            quote(&self.meta.id),
            self.meta.created,
            quote(&self.meta.model),
            quote(text),
        )
    }

    fn reasoning(&self, text: &str) -> String {
        self.text_chunk("reasoning_content", &line(text))
    }

    fn content(&mut self, text: &str) -> String {
        self.sent.push_str(text);
        self.text_chunk("content", text)
    }

    /// The lines for one run event, and whether the stream is complete.
    fn frames(&mut self, ev: &LoggedEvent) -> (String, bool) {
        match ev.view() {
            EventView::AnswerDelta(text) if text.is_empty() => (String::new(), false),
            EventView::AnswerDelta(text) => (self.content(&text), false),
            EventView::Agent(AgentEvent::Step(step)) => (self.step(step), false),
            EventView::Agent(AgentEvent::Answer(answer)) => (self.answer(answer), false),
            EventView::Agent(AgentEvent::Done(outcome)) => (self.done(&outcome), true),
            EventView::Unreadable(EventName::Done, _) => (DONE.to_string(), true),
            _ => (String::new(), false),
        }
    }

    fn step(&self, step: StepEvent) -> String {
        match step {
            StepEvent::ToolStart {
                tool, arguments, ..
            } => self.reasoning(&format!("→ {tool} {arguments}")),
            StepEvent::ToolEnd {
                tool,
                observation,
                error,
                blocked,
                ..
            } => {
                let what = if blocked {
                    " (blocked)"
                } else if error {
                    " (error)"
                } else {
                    ""
                };
                self.reasoning(&format!("← {tool}{what}: {observation}"))
            }
            StepEvent::ApprovalRequired {
                tool, approval_id, ..
            } => self.reasoning(&format!(
                "waiting for approval of {tool} (approval {approval_id})"
            )),
            StepEvent::Safeguard { kind, tool, .. } => {
                self.reasoning(&safeguard_line(kind, tool.as_deref()))
            }
            _ => String::new(),
        }
    }

    /// An answer event other than a delta.
    fn answer(&mut self, answer: AnswerEvent) -> String {
        match answer {
            // Sent text cannot be taken back (a tool call followed it, or another answer replaces
            // it): say so, and start what follows on a new paragraph.
            AnswerEvent::Reset if !self.sent.is_empty() => {
                let mut out =
                    self.reasoning("the text above is not the answer; the answer follows");
                out.push_str(&self.content("\n\n"));
                out
            }
            _ => String::new(),
        }
    }

    fn done(&mut self, outcome: &RunOutcome) -> String {
        let mut out = String::new();
        // An answer that reached the run but not the stream (none is expected) is sent now.
        if let Some(rest) = outcome.answer.strip_prefix(self.sent.as_str()) {
            if !rest.is_empty() {
                out.push_str(&self.content(rest));
            }
        }
        if let Some(action) = &outcome.required_action {
            let calls = tool_calls_json(self.meta.run_id, &action.tool_calls, true);
            out.push_str(&data(&self.chunk(json!({"tool_calls": calls}), None)));
        }
        out.push_str(&data(
            &self.chunk(json!({}), Some(finish_reason(outcome.status))),
        ));
        if self.include_usage {
            let mut last = self.chunk(json!({}), None);
            last["choices"] = json!([]);
            last["usage"] = usage_json(&outcome.usage);
            out.push_str(&data(&last));
        }
        out.push_str(DONE);
        out
    }
}

#[cfg(test)]
mod tests;
