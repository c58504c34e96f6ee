//! A run's end: `done`, the terminal state and the answer stored in one transaction of the
//! shared writer before `done` becomes visible, with what the run leaves over (late
//! follow-ups, interrupts the loop never saw) made the next run's query. On PostgreSQL the same
//! transaction closes the run's commands (sent through other instances, `store/events/close.rs`):
//! in the usual case none is pending and that is all; when some are, the end is held back, the
//! owner does them here and writes a `done` that tells of them.

use std::sync::Arc;

use uuid::Uuid;

use super::{final_state, Done};
use crate::agent::{AgentEvent, Interrupt};
use crate::domain::{EventName, RunStatus};
use crate::llm::Continuity;
use crate::runs::core::manager::{LiveRun, RunManager};
use crate::runs::core::persist::{EventWriter, PersistError};
use crate::runs::core::request::{ConversationRef, StartRun};
use crate::store::{FinalState, Settlement, StoredEvent};

/// What a run's end hands on: the interrupts the loop never saw, then its late follow-ups
/// and those of its commands done at its end, in that order; `reported` of them were in
/// `done.unprocessed_interrupts` already.
struct Leftovers {
    items: Vec<(Uuid, String)>,
    reported: usize,
}

impl RunManager {
    /// Persists the run's remaining events, `done`, the terminal state and the answer in one
    /// transaction (through the shared writer) before `done` becomes visible, so a client that
    /// reads `done` and asks for the run (or starts another, or replays the events from the
    /// database) sees it finished and complete.
    /// `answer_continuity` is kept with the stored answer before `done` becomes visible, so the
    /// conversation's next run on the same model finds it.
    pub(super) async fn finish(
        self: &Arc<Self>,
        writer: &EventWriter,
        live: &LiveRun,
        done: Done,
        answer_continuity: Option<Continuity>,
    ) {
        let mut left = self.leftovers(live, &done).await;
        let (mut done, mut next) = self.plan_next_run(live, done, &left);
        // Settled in the transaction that stores `done`: whoever reads it finds the spend.
        let closing = live.ledger.closing();
        let mut close = self.store.is_shared();
        let stored = loop {
            let state = self.end_state(live, &done, closing.clone(), close);
            let event = StoredEvent {
                seq: done.seq as i64,
                name: EventName::Done.as_str().to_string(),
                data: done.data.clone(),
            };
            match writer.finish(live.id, Some((event, state))).await {
                Err(PersistError::CommandsPending) if close => {
                    left.items.extend(self.settle_commands(live).await);
                    (done, next) = self.plan_next_run(live, done, &left);
                    close = false;
                }
                other => break other,
            }
        };
        match stored {
            Ok(true) => {
                if let Some(c) = answer_continuity.filter(|_| !done.outcome.answer.is_empty()) {
                    self.keep_answer_continuity(live.id, &c).await;
                }
            }
            Ok(false) => {
                tracing::warn!(run_id = %live.id, "the run was already finished in the database")
            }
            Err(PersistError::Fenced) => {
                // Another instance owns the run: its `done` is not this one (the run's task is
                // being stopped through `lost`). What its calls spent is still settled.
                if let Some(pending) = closing {
                    live.ledger.finish_with(pending).await;
                }
                self.release(live);
                live.log.close();
                return;
            }
            Err(e) => {
                tracing::error!(run_id = %live.id, error = %e, "could not store the run's final state")
            }
        }
        self.release(live);
        // Started before `done` becomes visible, so a client following `next_run_id` finds it.
        if let Some(next) = next {
            if let Err(e) = self.start(&live.owner, next).await {
                tracing::warn!(error = %e, "could not start the run of the late follow-ups (they stay in the conversation)");
            }
        }
        live.log.close_with(EventName::Done.as_str(), done.data);
    }

    /// The terminal state `done` stores, with the run's last settlements (`budget`) and, when
    /// `close`, the closing of its commands.
    fn end_state(
        &self,
        live: &LiveRun,
        done: &Done,
        budget: Option<Vec<Settlement>>,
        close: bool,
    ) -> FinalState {
        let mut state = final_state(&done.outcome, Some((live.conversation_id, live.id)));
        state.budget = budget;
        state.close_commands = close;
        state
    }

    /// Stores the answer's continuity. A failure loses only that: the answer then goes back to
    /// the model plain, which providers accept for a turn without tool calls.
    async fn keep_answer_continuity(&self, run_id: Uuid, continuity: &Continuity) {
        if let Err(e) = self.store.set_answer_continuity(run_id, continuity).await {
            tracing::warn!(%run_id, error = %e, "could not store the answer's continuity");
        }
    }

    /// The interrupts `done` reports and the run's late follow-ups, which close here. On
    /// PostgreSQL under the command turn: a pass of `do_commands` in flight has queued what it
    /// took for this run before they close, and later passes leave the run's commands to its
    /// end (`settle_commands`).
    async fn leftovers(&self, live: &LiveRun, done: &Done) -> Leftovers {
        let mut items: Vec<(Uuid, String)> = done
            .outcome
            .unprocessed_interrupts
            .iter()
            .map(|i| (i.id, i.content.clone()))
            .collect();
        let reported = items.len();
        let _turn = match self.store.is_shared() {
            true => Some(self.command_turn.lock().await),
            false => None,
        };
        items.extend(live.follow_ups.close());
        Leftovers { items, reported }
    }

    /// What the run leaves over becomes the query of a next run, announced in
    /// `done.next_run_id` — unless the user stopped this run or the server stops: then every
    /// one of them is reported in `done.unprocessed_interrupts`, so none accepted goes unsaid.
    /// Planned again with more leftovers, the answer replaces the first.
    fn plan_next_run(
        &self,
        live: &LiveRun,
        mut done: Done,
        left: &Leftovers,
    ) -> (Done, Option<StartRun>) {
        let items = &left.items;
        let stopped = done.outcome.status == RunStatus::Cancelled || self.shutdown.is_cancelled();
        if stopped && items.len() > left.reported {
            done.outcome.unprocessed_interrupts = items
                .iter()
                .map(|(id, content)| Interrupt {
                    id: *id,
                    content: content.clone(),
                })
                .collect();
            done.data = AgentEvent::Done(done.outcome.clone()).data_json();
            return (done, None);
        }
        if items.is_empty() || stopped {
            return (done, None);
        }
        let id = Uuid::new_v4();
        let query: Vec<&str> = items.iter().map(|(_, c)| c.as_str()).collect();
        let mut next = StartRun::new(
            ConversationRef::Existing(live.conversation_id),
            query.join("\n\n"),
        );
        next.id = Some(id);
        next.replaces = items.iter().map(|(i, _)| *i).collect();
        done.outcome.next_run_id = Some(id.to_string());
        done.data = AgentEvent::Done(done.outcome.clone()).data_json();
        (done, Some(next))
    }
}
