//! The repeat rule. Small models often begin a reply by asking again for the call they just
//! made (issue 52: 22 of 27 second replies of a 0.5B model), then add a flood of others. When a
//! reply's first call is the run's most recent execution (same tool, canonical arguments: the
//! last call of the last reply that ran one), it runs alone first; an identical result means the
//! model has nothing new to learn, so the loop ends there without running the rest, and the
//! answer is written from the results so far. A poll whose result changed goes on as usual; a
//! call repeated with other calls in between is left to cycle detection. A loop without cycle
//! detection (threshold 0) has no repeat rule either.

use tokio_util::sync::CancellationToken;

use super::*;
use crate::agent::executor::Batch;

impl LoopRun<'_> {
    /// Runs a reply's calls (already checkpointed), the first alone when it repeats the last
    /// execution; the batch says whether the rule stopped it.
    pub(super) async fn run_reply(
        &self,
        calls: Vec<PendingCall>,
        cancel: &CancellationToken,
    ) -> Batch {
        let last = &self.last_run;
        let gate = self
            .repeats_last(&calls)
            .then_some(|first: &Executed| first.ran && last.same_result(&first.record.observation));
        self.executor
            .execute_gated(self.iterations, calls, cancel, gate)
            .await
    }

    /// The reply's first call is the run's most recent execution, and the rule applies: cycle
    /// detection is on and the reply calls none of the caller's tools (their results must come
    /// with the continuation).
    fn repeats_last(&self, calls: &[PendingCall]) -> bool {
        let Some(first) = calls.first() else {
            return false;
        };
        self.config.cycle_detection_threshold > 0
            && !self.pausing
            && first
                .arguments
                .as_ref()
                .is_ok_and(|args| self.last_run.repeats(&first.tool, args))
    }

    /// The rule stopped the reply: its results go into the history (every call of the reply
    /// answered, those not run with a note), and the loop ends with the answer written from
    /// what the tools returned.
    pub(super) fn stop_repeated(&mut self, batch: Batch) -> Next {
        let tool = batch.executed.first().map(|e| e.record.tool.clone());
        for e in &batch.executed {
            let r = &e.record;
            let message = self.result_message(&r.call_id, &r.observation, r.error);
            self.messages.push(message);
        }
        for c in &batch.not_run {
            let message = self.result_message(&c.call_id, prompts::NOT_RUN_AFTER_REPEAT, true);
            self.messages.push(message);
        }
        for e in batch.executed {
            self.tool_calls += 1;
            self.steps.push(e.record);
        }
        tracing::info!(
            iteration = self.iterations,
            not_run = batch.not_run.len(),
            "the reply repeated the last call and got the same result; writing the answer"
        );
        self.safeguard(SafeguardKind::CycleStop, tool);
        self.status = RunStatus::Completed;
        self.brief = self.step_summary(
            "I stopped calling tools: the last call repeated the one before it and returned \
             the same result. Steps taken:\n",
        );
        Next::Stop
    }
}
