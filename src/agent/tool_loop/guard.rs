//! The context guard inside the loop: compaction when over budget, and the one
//! failure when compaction cannot help.

use super::*;

/// What compaction must keep is alone over the prompt budget.
#[derive(Debug, thiserror::Error)]
#[error("the context cannot fit the model: after compaction {tokens} tokens remain of a {budget}-token budget (the system prompt, query and pinned messages alone are over it)")]
pub(super) struct ContextTooLarge {
    tokens: usize,
    budget: usize,
}

impl LoopRun<'_> {
    /// Compacts when over budget (or when `forced`). Fails when compaction cannot help: what
    /// it must keep (system prompt, query, pinned messages) is alone over the budget, so every
    /// further iteration would compact again for nothing.
    pub(super) async fn guard_context(&mut self, forced: bool) -> Result<(), ContextTooLarge> {
        if !forced
            && !self
                .guard
                .over_budget_tokens(self.messages.tokens() + self.tool_tokens)
        {
            return Ok(());
        }
        let llm = self.compact_llm.clone();
        let compaction = tokio::select! {
            _ = self.handles.cancel.cancelled() => return Ok(()),
            c = self.guard.compact(llm.as_ref(), &self.messages, &self.tool_defs) => c,
        };
        self.usage += compaction.usage;
        let (before, after) = (
            compaction.event.tokens_before,
            compaction.event.tokens_after,
        );
        self.messages = History::new(compaction.messages);
        self.events().send(AgentEvent::Compact(compaction.event));
        let still_over = self
            .guard
            .over_budget_tokens(self.messages.tokens() + self.tool_tokens);
        if after >= before && still_over {
            return Err(ContextTooLarge {
                tokens: after,
                budget: self.guard.budget_tokens,
            });
        }
        Ok(())
    }

    /// Ends the loop as failed because the context cannot fit.
    pub(super) fn fail(&mut self, e: ContextTooLarge) {
        tracing::warn!(
            tokens = e.tokens,
            budget = e.budget,
            "compaction cannot bring the context under budget; the run fails"
        );
        self.status = RunStatus::Failed;
        self.error = Some(e.to_string());
        self.brief =
            "Sorry, I could not complete this request: the system prompt and the messages \
                      that must be kept are larger than the model's context budget."
                .to_string();
    }
}
