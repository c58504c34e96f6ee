//! The context guard: a cheap token estimate run before every loop LLM call, and
//! [`ContextGuard::compact`], which brings an over-budget history back under the budget.
//!
//! Compaction keeps the leading system message(s), every pinned message (the query, injected
//! interrupts; an old one's images become their `[image: <artifact id or URL>]` text) and the
//! recent tail verbatim, and replaces the older messages by ONE summary
//! produced by one LLM call told to preserve the most recent reasoning chain (the "hint").
//! When that call fails the older messages are simply dropped (truncation), and when the kept
//! messages alone are still too big the largest non-pinned contents are cut. Every step keeps the
//! provider protocol intact: an assistant `tool_calls` message always stays directly followed by
//! its tool results ([`is_well_formed`]). Compaction never fails; it degrades.
//!
//! Layout: `estimate` holds the token estimate and the protocol check, `summary` the summary
//! call and its prompt; this file decides what is kept, summarised or cut.

mod estimate;
mod history;
mod summary;

pub use estimate::{
    estimate_message_tokens, estimate_tokens, estimate_tool_tokens, is_well_formed, json_len,
    BYTES_PER_TOKEN, MESSAGE_OVERHEAD_TOKENS, TOOL_OVERHEAD_TOKENS,
};
pub use history::History;

use super::events::CompactEvent;
use crate::domain::prompt_budget;
use crate::llm::{Llm, Message, Role, ToolDefinition, Usage};
use estimate::message_tokens;
#[cfg(test)]
use summary::SUMMARY_MESSAGE_BYTES;
use summary::{cut, summarise};

/// The instruction of the summary prompt that keeps the agent's train of thought alive across a
/// compaction: without it summaries keep the facts but lose *why* the agent was doing what it did.
pub const REASONING_HINT: &str = "Preserve the most recent reasoning chain";
/// Appended to a content cut by the shrinking step, so the model knows it lost something.
pub const TRUNCATION_MARKER: &str = "\n[… truncated]";

/// The shrinking step leaves at least this many bytes of a message it cuts.
const MIN_KEPT_BYTES: usize = 256;

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

    /// The default budget: the model's context window minus its max output tokens.
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

    /// True when `tokens` (an estimate kept elsewhere, e.g. [`History::tokens`] plus the tool
    /// definitions') is over the budget.
    pub fn over_budget_tokens(&self, tokens: usize) -> bool {
        tokens > self.budget_tokens
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
        // Old images go as their `[image: …]` text: each counts as much as a page of text.
        out.extend(parts.kept_old.iter().map(|&i| {
            let mut m = messages[i].clone();
            m.images_to_text();
            m
        }));

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
                dag_step: None,
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
