//! The context guard (SPEC §2.10): a cheap token estimate run before every loop LLM call, and
//! [`ContextGuard::compact`], which brings an over-budget history back under the budget.
//!
//! Compaction keeps the leading system message(s), every pinned message (the query, injected
//! interrupts) and the recent tail verbatim, and replaces the older messages by ONE summary
//! produced by one LLM call told to preserve the most recent reasoning chain (the "hint").
//! When that call fails the older messages are simply dropped (truncation), and when the kept
//! messages alone are still too big the largest non-pinned contents are cut. Every step keeps the
//! provider protocol intact: an assistant `tool_calls` message always stays directly followed by
//! its tool results ([`is_well_formed`]). Compaction never fails; it degrades.

use std::io;

use crate::llm::{ChatRequest, Llm, Message, Role, ToolDefinition, Usage};

use super::events::CompactEvent;
use crate::domain::prompt_budget;

/// Tokens a provider adds around each message (role markers, separators). OpenAI documents ~3–4.
pub const MESSAGE_OVERHEAD_TOKENS: usize = 4;
/// Tokens a provider adds around each tool definition (`{"type":"function","function":…}`).
pub const TOOL_OVERHEAD_TOKENS: usize = 8;
/// The instruction of the summary prompt that keeps the agent's train of thought alive across a
/// compaction: without it summaries keep the facts but lose *why* the agent was doing what it did.
pub const REASONING_HINT: &str = "Preserve the most recent reasoning chain";
/// Appended to a content cut by the shrinking step, so the model knows it lost something.
pub const TRUNCATION_MARKER: &str = "\n[… truncated]";

/// Each tool result is cut to this many bytes in the summary prompt: the summary needs what a
/// result said, not all of it, and the prompt must stay well below the context window.
const SUMMARY_TOOL_RESULT_BYTES: usize = 2_000;
/// Each other message (and the hint's reasoning chain) is cut to this many bytes in the prompt.
const SUMMARY_MESSAGE_BYTES: usize = 4_000;
/// The shrinking step leaves at least this many bytes of a message it cuts.
const MIN_KEPT_BYTES: usize = 256;

const SUMMARY_SYSTEM_PROMPT: &str = "You compress the working history of a tool-using AI agent \
so that it can continue its task with a smaller context. Write a faithful, compact summary of \
the transcript you are given: the facts found, the tool results that matter (keep exact \
figures, names, identifiers and URLs), what was tried and failed and why, and the questions \
still open. Do not invent anything and do not answer the user's task yourself. Plain text, no \
preamble.";

/// Estimated prompt tokens of these messages plus these tool definitions.
///
/// No tokenizer is available, so this is the usual documented estimate (about 4 bytes of English
/// or JSON per token, see [`estimate_message_tokens`] and [`estimate_tool_tokens`]). It errs on
/// the generous side for English and under-counts dense scripts (CJK); the provider's typed
/// "context length exceeded" error and the engine's forced compaction cover the difference.
pub fn estimate_tokens(messages: &[Message], tools: &[ToolDefinition]) -> usize {
    estimate_message_tokens(messages) + estimate_tool_tokens(tools)
}

/// Estimated tokens of the messages alone: for each message,
/// `ceil(bytes / 4) + MESSAGE_OVERHEAD_TOKENS`, where `bytes` counts what a provider receives —
/// the content, the tool-call ids, names and raw arguments, and a tool message's `tool_call_id`.
/// `reasoning_content` is not counted: it is never sent back to the provider.
///
/// Runs before every loop LLM call, so it allocates nothing and is linear in the history.
pub fn estimate_message_tokens(messages: &[Message]) -> usize {
    messages.iter().map(message_tokens).sum()
}

/// Estimated tokens of the tool definitions: for each tool,
/// `ceil((name + description + JSON length of the parameters schema) / 4) + TOOL_OVERHEAD_TOKENS`.
///
/// The tool set is fixed for a run, so callers compute this once and pass it to
/// [`ContextGuard::over_budget_with_tool_tokens`]. The schema length is measured by serialising
/// into a byte counter, not into a string.
pub fn estimate_tool_tokens(tools: &[ToolDefinition]) -> usize {
    tools
        .iter()
        .map(|t| {
            let bytes = t.name.len() + t.description.len() + json_len(&t.parameters);
            bytes.div_ceil(4) + TOOL_OVERHEAD_TOKENS
        })
        .sum()
}

fn message_tokens(m: &Message) -> usize {
    let calls: usize = m
        .tool_calls
        .iter()
        .map(|c| c.id.len() + c.name.len() + c.arguments.len())
        .sum();
    let id = m.tool_call_id.as_deref().map_or(0, str::len);
    (m.content.len() + calls + id).div_ceil(4) + MESSAGE_OVERHEAD_TOKENS
}

/// Length of the compact JSON text of `value`, without building the text.
fn json_len(value: &serde_json::Value) -> usize {
    struct Counter(usize);
    impl io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    // Serialising a `Value` into a writer that never fails cannot fail; 0 would only under-count.
    match serde_json::to_writer(&mut counter, value) {
        Ok(()) => counter.0,
        Err(_) => 0,
    }
}

/// True when the history respects the provider protocol: every assistant message with
/// `tool_calls` is followed directly by one `tool` message per call (any order, nothing in
/// between), and every `tool` message answers a call of that assistant message. Providers
/// reject anything else, so the engine may `debug_assert!` it before each call.
pub fn is_well_formed(messages: &[Message]) -> bool {
    // Call ids of the last assistant `tool_calls` message still waiting for their result.
    let mut pending: Vec<&str> = Vec::new();
    for m in messages {
        if m.role == Role::Tool {
            let Some(id) = m.tool_call_id.as_deref() else {
                return false;
            };
            match pending.iter().position(|p| *p == id) {
                Some(i) => {
                    pending.swap_remove(i);
                }
                None => return false,
            }
            continue;
        }
        if !pending.is_empty() {
            return false;
        }
        if m.role == Role::Assistant {
            pending.extend(m.tool_calls.iter().map(|c| c.id.as_str()));
        }
    }
    pending.is_empty()
}

/// The result of one compaction.
#[derive(Clone, Debug)]
pub struct Compaction {
    pub messages: Vec<Message>,
    pub event: CompactEvent,
    /// Usage of the summary call (zero when it was not made or failed).
    pub usage: Usage,
}

#[derive(Clone, Debug)]
pub struct ContextGuard {
    pub budget_tokens: usize,
    /// How many most-recent messages are always kept verbatim (tool pairs are never split).
    pub keep_recent: usize,
}

impl ContextGuard {
    pub fn new(budget_tokens: usize) -> Self {
        Self {
            budget_tokens,
            keep_recent: 6,
        }
    }

    /// The default budget of SPEC §2.10: the model's context window minus its max output tokens.
    pub fn for_llm(llm: &dyn Llm) -> Self {
        Self::new(prompt_budget(llm.context_window(), llm.max_output_tokens()) as usize)
    }

    pub fn with_keep_recent(mut self, keep_recent: usize) -> Self {
        self.keep_recent = keep_recent;
        self
    }

    pub fn over_budget(&self, messages: &[Message], tools: &[ToolDefinition]) -> bool {
        estimate_tokens(messages, tools) > self.budget_tokens
    }

    /// [`Self::over_budget`] with the tool definitions' tokens computed once per run by
    /// [`estimate_tool_tokens`].
    pub fn over_budget_with_tool_tokens(&self, messages: &[Message], tool_tokens: usize) -> bool {
        estimate_message_tokens(messages) + tool_tokens > self.budget_tokens
    }

    /// Compacts: system prompt, pinned messages and the recent tail kept; the rest summarised by
    /// one call to `llm` (truncation when that fails). Never fails.
    ///
    /// Called while under the budget it is a *forced* compaction (the provider said the prompt
    /// is too long although the estimate fits): the target is then three quarters of the
    /// current estimate, so the retried prompt is smaller whenever anything can be cut.
    pub async fn compact(
        &self,
        llm: &dyn Llm,
        messages: &[Message],
        tools: &[ToolDefinition],
    ) -> Compaction {
        let tool_tokens = estimate_tool_tokens(tools);
        let tokens_before = estimate_message_tokens(messages) + tool_tokens;
        let target = if tokens_before > self.budget_tokens {
            self.budget_tokens
        } else {
            tokens_before.saturating_mul(3) / 4
        };

        let parts = split(messages, self.keep_recent);
        let mut out: Vec<Message> = Vec::with_capacity(messages.len());
        out.extend_from_slice(&messages[..parts.head_end]);
        out.extend(parts.kept_old.iter().map(|&i| messages[i].clone()));

        let mut summary = String::new();
        let mut usage = Usage::default();
        if !parts.summarised.is_empty() {
            let old: Vec<&Message> = parts.summarised.iter().map(|&i| &messages[i]).collect();
            let n = old.len();
            let (text, call_usage) = summarise(llm, &old).await;
            usage = call_usage;
            let note = match text {
                Some(text) => {
                    let note = format!("[Context summary of {n} earlier messages]\n{text}");
                    summary = text;
                    note
                }
                None => {
                    summary =
                        format!("[{n} earlier messages were removed to fit the context window]");
                    summary.clone()
                }
            };
            out.push(Message::user(note));
        }
        let first_shrinkable = parts.head_end;
        out.extend_from_slice(&messages[parts.tail_start..]);

        let cuts = shrink(&mut out, first_shrinkable, tool_tokens, target);
        if summary.is_empty() && cuts > 0 {
            summary = format!("[{cuts} long messages were truncated to fit the context window]");
        }

        let tokens_after = estimate_message_tokens(&out) + tool_tokens;
        Compaction {
            event: CompactEvent {
                messages_before: messages.len(),
                messages_after: out.len(),
                tokens_before,
                tokens_after,
                summary,
            },
            messages: out,
            usage,
        }
    }
}

/// How a history is cut: `..head_end` leading system messages, then the old part (indices of
/// the kept pinned units and of the summarised messages), then `tail_start..` the tail.
struct Parts {
    head_end: usize,
    kept_old: Vec<usize>,
    summarised: Vec<usize>,
    tail_start: usize,
}

fn split(messages: &[Message], keep_recent: usize) -> Parts {
    let head_end = messages
        .iter()
        .position(|m| m.role != Role::System)
        .unwrap_or(messages.len());
    let mut tail_start = messages.len().saturating_sub(keep_recent).max(head_end);
    // Never open the tail on a tool result: pull its assistant `tool_calls` message in too.
    while tail_start > head_end
        && messages
            .get(tail_start)
            .is_some_and(|m| m.role == Role::Tool)
    {
        tail_start -= 1;
    }

    // The old part goes by units (an assistant `tool_calls` message with its results, or one
    // message); a unit with any pinned message is kept whole so no result loses its call.
    let mut kept_old = Vec::new();
    let mut summarised = Vec::new();
    let mut i = head_end;
    while i < tail_start {
        let mut end = i + 1;
        if messages[i].role == Role::Assistant && !messages[i].tool_calls.is_empty() {
            while end < tail_start && messages[end].role == Role::Tool {
                end += 1;
            }
        }
        let target = if messages[i..end].iter().any(|m| m.pinned) {
            &mut kept_old
        } else {
            &mut summarised
        };
        target.extend(i..end);
        i = end;
    }
    Parts {
        head_end,
        kept_old,
        summarised,
        tail_start,
    }
}

/// One summary call. `None` when it failed or said nothing; the usage is the call's (zero when
/// it failed, since a failed call reports none).
async fn summarise(llm: &dyn Llm, old: &[&Message]) -> (Option<String>, Usage) {
    let request = ChatRequest::new(vec![
        Message::system(SUMMARY_SYSTEM_PROMPT),
        Message::user(summary_prompt(old, transcript_budget(llm))),
    ]);
    match llm.chat(request).await {
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
fn transcript_budget(llm: &dyn Llm) -> usize {
    let input_tokens = prompt_budget(llm.context_window(), llm.max_output_tokens()) as usize;
    (input_tokens.saturating_mul(3)).max(SUMMARY_MESSAGE_BYTES * 2)
}

/// The user prompt of the summary call: the old messages rendered as plain text (structured
/// tool messages outside their pairing would break provider ordering rules), then the hint with
/// the last assistant turn of the summarised part as the chain to keep. A transcript longer than
/// `max_transcript` bytes loses its middle: the start holds the task's first findings and the
/// end the latest state, the two things a continuation needs most.
fn summary_prompt(old: &[&Message], max_transcript: usize) -> String {
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

fn render_message(out: &mut String, m: &Message, context: &[&Message]) {
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
            for c in &m.tool_calls {
                out.push_str(&format!("\n  called {}(", c.name));
                push_cut(out, &c.arguments, SUMMARY_TOOL_RESULT_BYTES);
                out.push(')');
            }
        }
    }
}

fn push_cut(out: &mut String, text: &str, max: usize) {
    let kept = cut(text, max);
    out.push_str(kept);
    if kept.len() < text.len() {
        out.push_str(TRUNCATION_MARKER);
    }
}

/// The longest prefix of `text` of at most `max` bytes that ends on a char boundary.
fn cut(text: &str, max: usize) -> &str {
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
fn cut_front(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut start = text.len() - max;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}

/// Cuts the largest non-pinned, non-system contents from `first..` (tool results first, then
/// the others, each time the biggest) until the estimate reaches `target` or nothing more can be
/// cut. Each message is cut at most once, to just what is needed or to [`MIN_KEPT_BYTES`].
/// Returns how many messages were cut.
fn shrink(messages: &mut [Message], first: usize, tool_tokens: usize, target: usize) -> usize {
    let mut total = estimate_message_tokens(messages) + tool_tokens;
    let mut cuts = 0;
    if total <= target {
        return cuts;
    }
    let mut order: Vec<usize> = (first..messages.len())
        .filter(|&i| !messages[i].pinned && messages[i].role != Role::System)
        .filter(|&i| messages[i].content.len() > MIN_KEPT_BYTES + TRUNCATION_MARKER.len())
        .collect();
    order.sort_by_key(|&i| {
        let m = &messages[i];
        (m.role != Role::Tool, std::cmp::Reverse(m.content.len()))
    });
    for i in order {
        if total <= target {
            break;
        }
        let m = &mut messages[i];
        let before = message_tokens(m);
        let excess_bytes = (total - target).saturating_mul(4) + TRUNCATION_MARKER.len();
        let keep = m
            .content
            .len()
            .saturating_sub(excess_bytes)
            .max(MIN_KEPT_BYTES);
        let mut cut_content = cut(&m.content, keep).to_string();
        cut_content.push_str(TRUNCATION_MARKER);
        if cut_content.len() >= m.content.len() {
            continue;
        }
        m.content = cut_content;
        total = total - before + message_tokens(m);
        cuts += 1;
    }
    cuts
}

#[cfg(test)]
mod tests;
