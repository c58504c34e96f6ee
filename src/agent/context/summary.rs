//! The summary call of a compaction: the prompt that renders the old messages as a transcript
//! (cut to what the summary model can take) with the reasoning-chain hint, and the call itself.

use super::{REASONING_HINT, TRUNCATION_MARKER};
use crate::domain::prompt_budget;
use crate::llm::{ChatRequest, Llm, Message, Role, Usage};
use crate::telemetry::{with_call_kind, CallKind};

/// Each tool result is cut to this many bytes in the summary prompt: the summary needs what a
/// result said, not all of it, and the prompt must stay well below the context window.
pub(super) const SUMMARY_TOOL_RESULT_BYTES: usize = 2_000;
/// Each other message (and the hint's reasoning chain) is cut to this many bytes in the prompt.
pub(super) const SUMMARY_MESSAGE_BYTES: usize = 4_000;

pub(super) const SUMMARY_SYSTEM_PROMPT: &str =
    "You compress the working history of a tool-using AI agent \
so that it can continue its task with a smaller context. Write a faithful, compact summary of \
the transcript you are given: the facts found, the tool results that matter (keep exact \
figures, names, identifiers and URLs), what was tried and failed and why, and the questions \
still open. Do not invent anything and do not answer the user's task yourself. Plain text, no \
preamble.";

/// One summary call. `None` when it failed or said nothing; the usage is the call's (zero when
/// it failed, since a failed call reports none).
pub(super) async fn summarise(llm: &dyn Llm, old: &[&Message]) -> (Option<String>, Usage) {
    let request = ChatRequest::new(vec![
        Message::system(SUMMARY_SYSTEM_PROMPT),
        Message::user(summary_prompt(old, transcript_budget(llm))),
    ]);
    match with_call_kind(CallKind::Compaction, llm.chat(request)).await {
        Ok(response) => {
            let text = response.content.trim();
            let text = (!text.is_empty()).then(|| text.to_string());
            (text, response.usage)
        }
        Err(error) => {
            tracing::warn!(%error, messages = old.len(), "summary call failed; truncating history");
            (None, Usage::default())
        }
    }
}

/// Bytes of transcript the summary model can take: about three quarters of its input budget at
/// 4 bytes per token, so a very long history cannot make the summary call itself overflow.
pub(super) fn transcript_budget(llm: &dyn Llm) -> usize {
    let input_tokens = prompt_budget(llm.context_window(), llm.max_output_tokens()) as usize;
    (input_tokens.saturating_mul(3)).max(SUMMARY_MESSAGE_BYTES * 2)
}

/// The user prompt of the summary call: the old messages rendered as plain text (structured
/// tool messages outside their pairing would break provider ordering rules), then the hint with
/// the last assistant turn of the summarised part as the chain to keep. A transcript longer than
/// `max_transcript` bytes loses its middle: the start holds the task's first findings and the
/// end the latest state, the two things a continuation needs most.
pub(super) fn summary_prompt(old: &[&Message], max_transcript: usize) -> String {
    let mut transcript = String::new();
    for m in old {
        render_message(&mut transcript, m, old);
        transcript.push('\n');
    }
    let mut out = format!(
        "Transcript of {} earlier messages of the agent's run:\n\n",
        old.len()
    );
    if transcript.len() > max_transcript {
        let head = cut(&transcript, max_transcript / 3);
        let tail = cut_front(&transcript, max_transcript - head.len());
        let omitted = transcript.len() - head.len() - tail.len();
        out.push_str(head);
        out.push_str(&format!(
            "\n[… {omitted} bytes of the transcript omitted …]\n"
        ));
        out.push_str(tail);
    } else {
        out.push_str(&transcript);
    }
    out.push_str(&format!(
        "\n{REASONING_HINT}: keep the agent's latest line of thought below nearly verbatim at the \
         end of your summary, so that it can continue exactly where it stopped.\n"
    ));
    if let Some(last) = old.iter().rev().find(|m| m.role == Role::Assistant) {
        out.push_str("\nLatest reasoning chain:\n");
        if let Some(reasoning) = last.reasoning_content.as_deref() {
            out.push_str(cut(reasoning, SUMMARY_MESSAGE_BYTES));
            out.push('\n');
        }
        render_message(&mut out, last, old);
    }
    out.push_str("\nWrite the summary now.");
    out
}

pub(super) fn render_message(out: &mut String, m: &Message, context: &[&Message]) {
    match m.role {
        Role::Tool => {
            let id = m.tool_call_id.as_deref().unwrap_or("");
            let name = context
                .iter()
                .flat_map(|c| c.tool_calls.iter())
                .find(|c| c.id == id)
                .map_or("unknown tool", |c| c.name.as_str());
            out.push_str(&format!("tool result ({name}): "));
            push_cut(out, &m.content, SUMMARY_TOOL_RESULT_BYTES);
        }
        role => {
            out.push_str(match role {
                Role::System => "system: ",
                Role::User => "user: ",
                _ => "assistant: ",
            });
            push_cut(out, &m.content, SUMMARY_MESSAGE_BYTES);
            for image in &m.images {
                out.push(' ');
                out.push_str(&image.stored().placeholder());
            }
            for c in &m.tool_calls {
                out.push_str(&format!("\n  called {}(", c.name));
                push_cut(out, &c.arguments, SUMMARY_TOOL_RESULT_BYTES);
                out.push(')');
            }
        }
    }
}

pub(super) fn push_cut(out: &mut String, text: &str, max: usize) {
    let kept = cut(text, max);
    out.push_str(kept);
    if kept.len() < text.len() {
        out.push_str(TRUNCATION_MARKER);
    }
}

/// The longest prefix of `text` of at most `max` bytes that ends on a char boundary.
pub(super) fn cut(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The longest suffix of `text` of at most `max` bytes that starts on a char boundary.
pub(super) fn cut_front(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut start = text.len() - max;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}
