//! placeholder (helper F): the context guard (SPEC §2.10). Public shape fixed; body being written.
use crate::llm::{Llm, Message, ToolDefinition, Usage};

use super::events::CompactEvent;

/// Estimated prompt tokens of these messages plus these tool definitions.
pub fn estimate_tokens(messages: &[Message], tools: &[ToolDefinition]) -> usize {
    let chars: usize = messages.iter().map(|m| m.content.len()).sum::<usize>()
        + tools.iter().map(|t| t.description.len()).sum::<usize>();
    chars / 4
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

    pub fn over_budget(&self, messages: &[Message], tools: &[ToolDefinition]) -> bool {
        estimate_tokens(messages, tools) > self.budget_tokens
    }

    /// Compacts: system prompt, pinned messages and the recent tail kept; the rest summarised by
    /// one call to `llm` (truncation when that fails). Never fails.
    pub async fn compact(
        &self,
        _llm: &dyn Llm,
        messages: &[Message],
        tools: &[ToolDefinition],
    ) -> Compaction {
        let tokens = estimate_tokens(messages, tools);
        Compaction {
            messages: messages.to_vec(),
            event: CompactEvent {
                messages_before: messages.len(),
                messages_after: messages.len(),
                tokens_before: tokens,
                tokens_after: tokens,
                summary: String::new(),
            },
            usage: Usage::default(),
        }
    }
}
