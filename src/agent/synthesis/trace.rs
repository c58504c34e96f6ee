//! The synthesis trace: the question, every tool call with its arguments and
//! result, and the draft answer — bounded. Each result and each call's arguments are cut to the
//! `truncation` characters, and the whole to a byte limit: when the steps do not fit, the first
//! and the last are kept and the middle ones are replaced by one marker saying how many were
//! left out. The limit is the configured `synthesis_max_bytes`, never more than the model's
//! prompt budget by the context guard's estimate ([`trace_limit`]).

use std::fmt::Write as _;
use std::io;

use super::super::context::{estimate_message_tokens, BYTES_PER_TOKEN, MESSAGE_OVERHEAD_TOKENS};
use super::super::prompts;
use super::super::record::StepRecord;
use super::{truncate_chars, TraceLimits};
use crate::domain::text::clip;
use crate::llm::Message;

/// The smallest trace limit: room for the question, one step and the draft, cut.
const MIN_TRACE_BYTES: usize = 1024;
/// Characters of a tool name in the trace (a model may name a tool with megabytes).
const TOOL_NAME_CHARS: usize = 100;

/// The byte limit of the trace: `max_bytes`, and no more than what `budget_tokens` leaves after
/// the synthesiser's system prompt and the message overheads, at the guard's bytes per token.
pub fn trace_limit(max_bytes: usize, budget_tokens: usize) -> usize {
    let system = estimate_message_tokens(&[Message::system(prompts::SYNTHESIS_SYSTEM)]);
    let room = budget_tokens
        .saturating_sub(system + MESSAGE_OVERHEAD_TOKENS)
        .saturating_mul(BYTES_PER_TOKEN);
    max_bytes.min(room).max(MIN_TRACE_BYTES)
}

/// `text` cut to at most `max` bytes on a char boundary, with a marker when cut (the marker
/// fits in `max` when `max` is at least 64).
pub fn cut_bytes(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let marker = format!("… [cut: {} bytes in all]", text.len());
    let mut end = max.saturating_sub(marker.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{marker}", &text[..end])
}

/// The synthesis user message, at most `limits.max_bytes` bytes (plus a marker's few bytes).
pub fn build_trace(query: &str, steps: &[StepRecord], brief: &str, limits: TraceLimits) -> String {
    let max = limits.max_bytes;
    // The question gets at most a quarter, the draft half (a larger one is the answer itself,
    // see `stream_answer`); the steps share the rest.
    let mut s = format!(
        "Original question:\n{}\n\nExecution trace:\n",
        cut_bytes(query, max / 4)
    );
    let end = format!("\nDraft answer:\n{}\n", cut_bytes(brief, max / 2));
    if steps.is_empty() {
        s.push_str("(no tools were called)\n");
    }
    let room = max.saturating_sub(s.len() + end.len() + 120);
    let line = |i: usize| step_line(i, &steps[i], limits.truncation);
    // The first steps up to half the room, then the last ones in what is left.
    let (mut head, mut used) = (Vec::new(), 0);
    for i in 0..steps.len() {
        let l = line(i);
        if used + l.len() > room / 2 {
            break;
        }
        used += l.len();
        head.push(l);
    }
    let mut tail = Vec::new();
    for i in (head.len()..steps.len()).rev() {
        let l = line(i);
        if used + l.len() > room {
            break;
        }
        used += l.len();
        tail.push(l);
    }
    let elided = steps.len() - head.len() - tail.len();
    head.iter().for_each(|l| s.push_str(l));
    if elided > 0 {
        let _ = writeln!(
            s,
            "… [{elided} of {} steps left out here: the trace is limited to {max} bytes] …",
            steps.len()
        );
    }
    tail.iter().rev().for_each(|l| s.push_str(l));
    s.push_str(&end);
    s
}

/// One step: `n. tool(arguments) [status]` and its result, each part cut.
fn step_line(i: usize, step: &StepRecord, truncation: usize) -> String {
    let status = if step.blocked {
        " [blocked]"
    } else if step.error {
        " [error]"
    } else {
        ""
    };
    format!(
        "{}. {}({}){status}\n   Result: {}\n",
        i + 1,
        clip(&step.tool, TOOL_NAME_CHARS),
        json_prefix(&step.arguments, truncation),
        truncate_chars(&step.observation, truncation)
    )
}

/// The JSON text of `value` cut to `max_chars` characters, without writing more of it than
/// that: arguments may be megabytes.
pub fn json_prefix(value: &serde_json::Value, max_chars: usize) -> String {
    struct Bounded {
        buf: Vec<u8>,
        max: usize,
    }
    impl io::Write for Bounded {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            let take = b.len().min(self.max - self.buf.len());
            self.buf.extend_from_slice(&b[..take]);
            if take < b.len() {
                return Err(io::Error::other("full"));
            }
            Ok(take)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    // A char is at most 4 bytes: this many bytes always hold `max_chars + 1` characters.
    let mut out = Bounded {
        buf: Vec::new(),
        max: max_chars.saturating_add(1).saturating_mul(4),
    };
    // Writing stops with an error once the buffer is full: that is the point.
    let _ = serde_json::to_writer(&mut out, value);
    let text = match String::from_utf8(out.buf) {
        Ok(t) => t,
        // Cut inside a character: keep the whole ones.
        Err(e) => {
            let valid = e.utf8_error().valid_up_to();
            let mut bytes = e.into_bytes();
            bytes.truncate(valid);
            String::from_utf8(bytes).unwrap_or_default()
        }
    };
    // Cut short, the text holds more than `max_chars` characters, so the marker says so.
    truncate_chars(&text, max_chars)
}

#[cfg(test)]
mod tests;
