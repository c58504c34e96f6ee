//! The tool-call limits of a run's loop: `max_tool_calls_per_reply` (a reply's calls past it are
//! dropped from the reply before anything runs, and the model is told after the results) and
//! `max_tool_calls_per_run` (then the loop stops calling tools and the answer is written from
//! what the run has). Dropping the extra calls from the stored reply, rather than answering
//! each, keeps the provider protocol (every call in the history has exactly one result) while
//! the history, the checkpoints and the events stay the size of the calls that ran.

use super::*;
use crate::agent::events::ToolLimit;

impl LoopRun<'_> {
    /// How many calls of the next reply may run: the reply's limit, or what is left of the
    /// run's (at least one: the loop stops before a reply when none is left).
    pub(super) fn calls_allowed(&self) -> usize {
        let cfg = self.config;
        let left = cfg.max_tool_calls_per_run.saturating_sub(self.tool_calls);
        cfg.max_tool_calls_per_reply.min(left) as usize
    }

    /// True when the run may make no more tool calls.
    pub(super) fn tool_calls_used_up(&self) -> bool {
        self.tool_calls >= self.config.max_tool_calls_per_run
    }

    /// After the results of a reply that asked for `asked` calls of which `ran` ran: tells the
    /// model about the others (one message, after every result) and says so in one event.
    pub(super) fn calls_dropped(&mut self, asked: usize, ran: usize) {
        let skipped = asked.saturating_sub(ran);
        self.skipped = skipped as u32;
        if skipped == 0 {
            return;
        }
        let cfg = self.config;
        let by_reply = ran >= cfg.max_tool_calls_per_reply as usize;
        tracing::warn!(
            asked,
            ran,
            iteration = self.iterations,
            "a reply asked for more tool calls than the limit; the rest were not run"
        );
        self.messages.push(Message::user(prompts::calls_not_run(
            asked,
            ran,
            cfg.max_tool_calls_per_reply,
        )));
        if by_reply {
            self.emit(StepEvent::Limit {
                iteration: self.iterations,
                limit: ToolLimit::ToolCallsPerReply,
                max: cfg.max_tool_calls_per_reply,
                skipped: self.skipped,
                dag_step: None,
            });
        }
    }

    /// The run's tool calls are used up: it ends here, visibly, and its answer is written from
    /// the calls it made.
    pub(super) fn stop_at_tool_limit(&mut self) {
        let max = self.config.max_tool_calls_per_run;
        tracing::info!(
            max,
            "the run reached its tool-call limit; writing the answer"
        );
        self.emit(StepEvent::Limit {
            iteration: self.iterations,
            limit: ToolLimit::ToolCallsPerRun,
            max,
            skipped: self.skipped,
            dag_step: None,
        });
        self.status = RunStatus::Completed;
        self.brief = self.step_summary(&format!(
            "I reached the limit of {max} tool calls for one run before finishing. Steps taken:\n"
        ));
    }
}

impl LoopRun<'_> {
    /// A reply asked only for calls stuck in a cycle: more iterations would bring nothing new,
    /// so the loop ends here and the answer is written from what the tools returned.
    pub(super) fn stop_stuck(&mut self) {
        tracing::info!(
            iteration = self.iterations,
            "the reply only repeated calls past the cycle warning; writing the answer"
        );
        self.safeguard(SafeguardKind::CycleStop, None);
        self.status = RunStatus::Completed;
        self.brief = self.step_summary(
            "I stopped calling tools: the last calls only repeated earlier ones with the same \
             results. Steps taken:\n",
        );
    }
}
