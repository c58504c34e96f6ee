//! Restart recovery: runs a previous process left `running` are failed, their logs closed
//! with the same fallback tail as any failed run, so replays end truthfully. The tail's ids
//! start above the run's committed event-id ceiling, never at an id a client may have seen.

use super::drive::final_state;
use super::manager::{RunError, RunManager, RESTART_ERROR};
use super::progress::Progress;
use crate::agent::events::{AnswerEvent, StartEvent};
use crate::agent::synthesis::{fallback_tail, AnswerSoFar};
use crate::agent::{AgentEvent, RunOutcome};
use crate::domain::EventName;
use crate::store::{RunBatch, RunRow, StoredEvent};

impl RunManager {
    /// Marks runs left `running` by a previous process as failed; returns how many.
    pub async fn recover(&self) -> Result<usize, RunError> {
        let stale = self.store.running_runs().await?;
        for run in &stale {
            self.recover_one(run).await?;
        }
        Ok(stale.len())
    }

    async fn recover_one(&self, run: &RunRow) -> Result<(), RunError> {
        let events = self.store.list_events(run.id, 0).await?;
        // Above every id clients may have seen (some never stored): an id never names two
        // events, at the price of a gap in the ids where the crash was.
        let ceiling = self.store.event_ceiling(run.id).await?;
        let stored_up_to = events.last().map(|e| e.seq).unwrap_or(0);
        let mut seq = stored_up_to.max(ceiling);
        // Clients may have seen events that were never stored, an answer's deltas among them.
        let unstored_seen = ceiling > stored_up_to;
        let answer_started = events
            .iter()
            .any(|e| EventName::from_stored(&e.name) == EventName::Answer);
        let so_far = if answer_started {
            AnswerSoFar::Partial
        } else {
            AnswerSoFar::NotStarted
        };
        let mode = run.mode;
        // The row's counters are written at the end: a crashed run's are in its events.
        let progress = Progress::of_stored(&events);
        let outcome = RunOutcome {
            iterations: run.iterations.max(progress.iterations()),
            tool_calls: run.tool_calls.max(progress.tool_calls()),
            usage: run.usage,
            ..RunOutcome::failed(
                mode,
                format!("Sorry, this run was {RESTART_ERROR} before it finished."),
                RESTART_ERROR,
            )
        };
        let state = final_state(&outcome, None);
        let mut tail = Vec::new();
        if events.is_empty() {
            // Killed before its first write: the replay must still begin with `start`.
            tail.push(AgentEvent::Start(StartEvent {
                run_id: run.id.to_string(),
                conversation_id: run.conversation_id.to_string(),
                model: run.model.clone(),
                mode,
            }));
        }
        let answer_tail = fallback_tail(outcome, so_far);
        let opens_answer = so_far == AnswerSoFar::NotStarted;
        for (i, ev) in answer_tail.into_iter().enumerate() {
            tail.push(ev);
            if i == 0 && opens_answer && unstored_seen {
                // After the fallback's `start`: discards whatever answer a client may have seen.
                tail.push(AgentEvent::Answer(AnswerEvent::Reset));
            }
        }
        let stored: Vec<StoredEvent> = tail
            .iter()
            .map(|e| {
                seq += 1;
                StoredEvent {
                    seq,
                    name: e.name().to_string(),
                    data: e.data_json(),
                }
            })
            .collect();
        // Tail and terminal state in one transaction: a crash during recovery leaves the run
        // `running` with its log untouched, and the next start recovers it again.
        self.store
            .write_runs(&[RunBatch {
                run_id: run.id,
                events: stored,
                ceiling: None,
                finish: Some(state),
            }])
            .await?;
        Ok(())
    }
}
