//! Answer synthesis (SPEC §2.12): one streaming call reads the full execution trace (built from
//! the step records, not the compacted loop context) and writes the user-facing answer. If it
//! fails — before or after the first delta — the loop's brief answer streams instead, preceded
//! by `answer {status:"reset"}` when deltas were already sent. The user always gets an answer.

use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use super::events::{AgentEvent, AnswerEvent, EventSink};
use super::prompts;
use super::run::StepRecord;
use crate::llm::{ChatRequest, Llm, LlmError, Message, StreamEvent, Usage};

/// What synthesis produced.
#[derive(Debug, Clone, PartialEq)]
pub struct Synthesis {
    pub answer: String,
    pub fallback: bool,
    pub usage: Usage,
}

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

/// The synthesis user message: the question, every tool call with its arguments and result
/// (each result cut to `truncation` characters), and the brief answer as the draft.
pub fn build_trace(query: &str, steps: &[StepRecord], brief: &str, truncation: usize) -> String {
    let mut s = format!("Original question:\n{query}\n\nExecution trace:\n");
    if steps.is_empty() {
        s.push_str("(no tools were called)\n");
    }
    for (i, step) in steps.iter().enumerate() {
        let status = if step.blocked {
            " [blocked]"
        } else if step.error {
            " [error]"
        } else {
            ""
        };
        s.push_str(&format!(
            "{}. {}({}){status}\n   Result: {}\n",
            i + 1,
            step.tool,
            step.arguments,
            truncate_chars(&step.observation, truncation)
        ));
    }
    s.push_str(&format!("\nDraft answer:\n{brief}\n"));
    s
}

fn emit(events: &EventSink, e: AnswerEvent) {
    // A closed sink means nobody listens any more; the run still finishes.
    events.send(AgentEvent::Answer(e));
}

/// Streams `text` as the answer (the fallback path), with `reset` first when needed.
pub fn emit_fallback(events: &EventSink, text: &str, reset: bool, started: bool) {
    if !started {
        emit(events, AnswerEvent::Start);
    }
    if reset {
        emit(events, AnswerEvent::Reset);
    }
    if !text.is_empty() {
        emit(
            events,
            AnswerEvent::Delta {
                content: text.to_string(),
            },
        );
    }
    emit(
        events,
        AnswerEvent::Done {
            content: text.to_string(),
            fallback: true,
        },
    );
}

/// Runs the streaming synthesis call and emits every `answer` event.
pub async fn stream_answer(
    llm: &dyn Llm,
    query: &str,
    steps: &[StepRecord],
    brief: &str,
    truncation: usize,
    events: &EventSink,
    cancel: &CancellationToken,
) -> Synthesis {
    emit(events, AnswerEvent::Start);
    let request = ChatRequest::new(vec![
        Message::system(prompts::SYNTHESIS_SYSTEM),
        Message::user(build_trace(query, steps, brief, truncation)),
    ]);
    let mut answer = String::new();
    let mut usage = Usage::default();
    let outcome: Result<(), LlmError> = async {
        let mut stream = tokio::select! {
            _ = cancel.cancelled() => return Err(LlmError::Cancelled),
            s = llm.stream_chat(request) => s?,
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
                    answer.push_str(&delta);
                    emit(events, AnswerEvent::Delta { content: delta });
                }
                Some(Ok(StreamEvent::Usage(u))) => usage = u,
                Some(Ok(_)) => {}
            }
        }
    }
    .await;
    if usage.llm_calls == 0 {
        // The call was made even if it reported nothing (or failed).
        usage.llm_calls = 1;
    }
    match outcome {
        Ok(()) if !answer.trim().is_empty() => {
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
            }
        }
        other => {
            if let Err(e) = &other {
                tracing::warn!(error = %e, "answer synthesis failed; streaming the brief answer");
            }
            emit_fallback(events, brief, !answer.is_empty(), true);
            Synthesis {
                answer: brief.to_string(),
                fallback: true,
                usage,
            }
        }
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
}
