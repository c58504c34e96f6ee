//! Answer synthesis: one streaming call reads the full execution trace (built from
//! the step records, not the compacted loop context) and writes the user-facing answer. If it
//! fails — before or after the first delta — the loop's brief answer streams instead, preceded
//! by `answer {status:"reset"}` when deltas were already sent. The user always gets an answer.
//! A stop during it keeps exactly what was streamed. When it runs at all is the engine's
//! decision (docs/configuration.md `synthesis`).

use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use super::events::{AgentEvent, AnswerEvent, AnswerSource, EventSink, RunOutcome};
use super::prompts;
use super::record::StepRecord;
use crate::llm::{ChatRequest, Continuity, Llm, LlmError, Message, StreamEvent, Usage};
use crate::telemetry::{with_call_kind, CallKind};

mod dump;
mod trace;
pub use dump::{clean_draft, is_call_dump, observation_answer};
pub use trace::{build_trace, cut_bytes, json_prefix, trace_limit};

/// What synthesis produced.
#[derive(Debug, Clone, PartialEq)]
pub struct Synthesis {
    pub answer: String,
    pub fallback: bool,
    pub usage: Usage,
    /// What the model sent with the synthesised answer beyond its text (none on a fallback).
    pub continuity: Option<Continuity>,
}

/// The answer of a run stopped before it had one.
pub const CANCELLED_ANSWER: &str = "The run was cancelled before it finished.";

/// Cuts `text` to `max` characters (on a char boundary) with a marker saying how much was cut.
pub fn truncate_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_string(),
        Some((byte, _)) => {
            let cut = text[byte..].chars().count();
            format!("{}… [truncated {cut} characters]", &text[..byte])
        }
    }
}

fn emit(events: &EventSink, e: AnswerEvent) {
    // A closed sink means nobody listens any more; the run still finishes.
    events.send(AgentEvent::Answer(e));
}

/// How much of the answer stream a client has seen when a fallback text replaces it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AnswerSoFar {
    /// No `answer` event yet: the fallback opens the stream.
    NotStarted,
    /// `answer {status:"start"}` was sent, no text.
    Started,
    /// Deltas were sent: the client must discard them (`reset`).
    Partial,
}

/// The `answer` events that stream `text` as a fallback answer (a failure's or a stop's
/// explanation: its `start` names no source).
pub fn fallback_answer(text: &str, so_far: AnswerSoFar) -> Vec<AnswerEvent> {
    answer_events(text, so_far, None)
}

/// The `answer` events that stream `text` whole as a fallback-marked answer from `source`.
fn answer_events(
    text: &str,
    so_far: AnswerSoFar,
    source: Option<AnswerSource>,
) -> Vec<AnswerEvent> {
    let mut events = Vec::with_capacity(4);
    match so_far {
        AnswerSoFar::NotStarted => events.push(AnswerEvent::Start { source }),
        AnswerSoFar::Started => {}
        AnswerSoFar::Partial => events.push(AnswerEvent::Reset),
    }
    if !text.is_empty() {
        events.push(AnswerEvent::Delta {
            content: text.to_string(),
        });
    }
    events.push(AnswerEvent::Done {
        content: text.to_string(),
        fallback: true,
    });
    events
}

/// The last events of a run that ends on its fallback text `outcome.answer` — failed or
/// cancelled in the loop, a panic the run manager caught, a run a restart interrupted: the
/// answer events, then `done` with `outcome`.
pub fn fallback_tail(outcome: RunOutcome, so_far: AnswerSoFar) -> Vec<AgentEvent> {
    let mut tail: Vec<AgentEvent> = fallback_answer(&outcome.answer, so_far)
        .into_iter()
        .map(AgentEvent::Answer)
        .collect();
    tail.push(AgentEvent::Done(outcome));
    tail
}

/// How the synthesis trace is cut: each result (and each call's arguments) to `truncation`
/// characters, the whole to `max_bytes` ([`trace_limit`]).
#[derive(Clone, Copy, Debug)]
pub struct TraceLimits {
    pub truncation: usize,
    pub max_bytes: usize,
}

/// Runs the streaming synthesis call and emits every `answer` event. A draft that is a tool-call
/// dump is replaced by the observations ([`clean_draft`]) before it can stand as an answer; a
/// draft too large for the trace is the answer itself, uncalled.
pub async fn stream_answer(
    llm: &dyn Llm,
    query: &str,
    steps: &[StepRecord],
    brief: &str,
    limits: TraceLimits,
    events: &EventSink,
    cancel: &CancellationToken,
) -> Synthesis {
    let draft = clean_draft(brief, steps);
    // A draft larger than half the trace may be is the answer itself: synthesis would read it
    // cut and could only lose some of it.
    if draft.len() > limits.max_bytes / 2 {
        tracing::debug!(
            bytes = draft.len(),
            "no synthesis (the draft is too large); the draft is the answer"
        );
        let source = if draft == brief {
            AnswerSource::Reply
        } else {
            AnswerSource::Results
        };
        return draft_answer(draft, source, events);
    }
    let trace = build_trace(query, steps, &draft, limits);
    let on_dump = observation_answer(steps).unwrap_or_else(|| draft.clone());
    synthesise(llm, trace, &draft, &on_dump, events, cancel).await
}

/// `draft` streamed as the answer, without a synthesis call.
fn draft_answer(draft: String, source: AnswerSource, events: &EventSink) -> Synthesis {
    for e in answer_events(&draft, AnswerSoFar::NotStarted, Some(source)) {
        emit(events, e);
    }
    Synthesis {
        answer: draft,
        fallback: true,
        usage: Usage::default(),
        continuity: None,
    }
}

/// The synthesis call over any trace (`user`): the synthesiser's system prompt, streamed as
/// `answer` events, with `fallback` streamed instead when it fails. The DAG
/// engine's answer goes through here with its own trace.
pub async fn stream_synthesis(
    llm: &dyn Llm,
    user: String,
    fallback: &str,
    events: &EventSink,
    cancel: &CancellationToken,
) -> Synthesis {
    synthesise(llm, user, fallback, fallback, events, cancel).await
}

/// [`stream_synthesis`], with `on_dump` streamed instead of a synthesised answer that is only
/// tool calls ([`is_call_dump`]), and `fallback` when the call fails.
async fn synthesise(
    llm: &dyn Llm,
    user: String,
    fallback: &str,
    on_dump: &str,
    events: &EventSink,
    cancel: &CancellationToken,
) -> Synthesis {
    let mut brief = fallback;
    emit(events, AnswerEvent::start(AnswerSource::Synthesis));
    let request = ChatRequest::new(vec![
        Message::system(prompts::SYNTHESIS_SYSTEM),
        Message::user(user),
    ]);
    let mut streamed = Streamed::default();
    let outcome = stream_synthesised(llm, request, events, cancel, &mut streamed).await;
    let Streamed {
        answer,
        mut usage,
        continuity,
    } = streamed;
    if usage.llm_calls == 0 && !matches!(outcome, Err(LlmError::BudgetExceeded(_))) {
        // The call was made even if it reported nothing (or failed); a refused one was not.
        usage.llm_calls = 1;
    }
    let dump = outcome.is_ok() && is_call_dump(&answer);
    if dump {
        tracing::info!(
            "the synthesised answer is a tool-call dump; answering from the observations"
        );
        brief = on_dump;
    }
    match outcome {
        Err(LlmError::Cancelled) => stopped(answer, usage, events),
        Ok(()) if !answer.trim().is_empty() && !dump => {
            emit(
                events,
                AnswerEvent::Done {
                    content: answer.clone(),
                    fallback: false,
                },
            );
            Synthesis {
                answer,
                fallback: false,
                usage,
                continuity,
            }
        }
        other => {
            if let Err(e) = &other {
                tracing::warn!(error = %e, "answer synthesis failed; streaming the brief answer");
            }
            let so_far = if answer.is_empty() {
                AnswerSoFar::Started
            } else {
                AnswerSoFar::Partial
            };
            for e in fallback_answer(brief, so_far) {
                emit(events, e);
            }
            Synthesis {
                answer: brief.to_string(),
                fallback: true,
                usage,
                continuity: None,
            }
        }
    }
}

/// What a synthesis call streamed so far.
#[derive(Default)]
struct Streamed {
    answer: String,
    usage: Usage,
    continuity: Option<Continuity>,
}

/// Streams the synthesis call's answer as `answer` deltas into `so_far` until the call ends,
/// fails or the run is cancelled ([`LlmError::Cancelled`]).
async fn stream_synthesised(
    llm: &dyn Llm,
    request: ChatRequest,
    events: &EventSink,
    cancel: &CancellationToken,
    so_far: &mut Streamed,
) -> Result<(), LlmError> {
    let mut stream = tokio::select! {
        _ = cancel.cancelled() => return Err(LlmError::Cancelled),
        s = with_call_kind(CallKind::Synthesis, llm.stream_chat(request)) => s?,
    };
    loop {
        let next = tokio::select! {
            _ = cancel.cancelled() => return Err(LlmError::Cancelled),
            n = stream.next() => n,
        };
        match next {
            None => return Ok(()),
            Some(Err(e)) => return Err(e),
            Some(Ok(StreamEvent::Content(delta))) if !delta.is_empty() => {
                so_far.answer.push_str(&delta);
                emit(events, AnswerEvent::Delta { content: delta });
            }
            Some(Ok(StreamEvent::Usage(u))) => so_far.usage = u,
            Some(Ok(StreamEvent::Continuity(c))) => so_far.continuity = Some(c),
            Some(Ok(_)) => {}
        }
    }
}

/// Stopped while writing: the answer is exactly what was streamed (the stop's explanation when
/// nothing was), never a different draft.
fn stopped(answer: String, usage: Usage, events: &EventSink) -> Synthesis {
    let so_far = if answer.is_empty() {
        AnswerSoFar::Started
    } else {
        AnswerSoFar::Partial
    };
    let text = if answer.is_empty() {
        CANCELLED_ANSWER.to_string()
    } else {
        answer
    };
    let mut events_out = answer_events(&text, so_far, None);
    if so_far == AnswerSoFar::Partial {
        // What was streamed stays: only `done` closes it.
        events_out.retain(|e| matches!(e, AnswerEvent::Done { .. }));
    }
    for e in events_out {
        emit(events, e);
    }
    Synthesis {
        answer: text,
        fallback: true,
        usage,
        continuity: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncation_is_char_safe_and_says_how_much() {
        assert_eq!(truncate_chars("héllo", 10), "héllo");
        assert_eq!(truncate_chars("héllo", 2), "hé… [truncated 3 characters]");
    }

    #[test]
    fn the_fallback_opens_or_resets_the_answer_as_needed() {
        let names = |so_far| {
            fallback_answer("sorry", so_far)
                .into_iter()
                .map(|e| match e {
                    AnswerEvent::Start { .. } => "start",
                    AnswerEvent::Reset => "reset",
                    AnswerEvent::Delta { .. } => "delta",
                    AnswerEvent::Done { fallback, .. } => {
                        assert!(fallback);
                        "done"
                    }
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(names(AnswerSoFar::NotStarted), ["start", "delta", "done"]);
        assert_eq!(names(AnswerSoFar::Started), ["delta", "done"]);
        assert_eq!(names(AnswerSoFar::Partial), ["reset", "delta", "done"]);
        assert_eq!(fallback_answer("", AnswerSoFar::Started).len(), 1);
    }

    #[test]
    fn the_tail_ends_with_done_carrying_the_outcome() {
        let outcome = RunOutcome::failed(crate::agent::Mode::Json, "sorry", "boom");
        let tail = fallback_tail(outcome.clone(), AnswerSoFar::NotStarted);
        assert_eq!(tail.len(), 4);
        assert_eq!(tail.last(), Some(&AgentEvent::Done(outcome)));
    }
}
