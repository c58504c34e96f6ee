//! The owner's side of commands sent through other instances (docs/deployment.md): one task per process
//! hears `LISTEN/NOTIFY` hints (the process's one [`Notifier`]), and does the pending command
//! rows of the runs it has live — on a hint for the run, after [`Hint::Missed`], and every
//! [`COMMAND_TICK`] whatever it heard, since a hint is only a hint. Each command is claimed
//! (`done_at`) before it takes effect, under one lock, so it takes effect once. Approvals
//! decided elsewhere reach the waiting hook the same way.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use uuid::Uuid;

use crate::agent::hooks::approval::{ApprovalInfo, ApprovalLedger, Decision};
use crate::agent::interrupts::Recall;
use crate::runs::core::control::{NOT_PENDING, RECALLED};
use crate::runs::core::manager::{LiveRun, RunError, RunManager};
use crate::store::notify::{Hint, COMMANDS_CHANNEL, EVENTS_CHANNEL, FOLLOW_CHANNEL};
use crate::store::{CommandKind, RowDecision, RunCommand, Store, StoreError};

/// How often the owner re-reads pending commands and decisions without being told to.
pub const COMMAND_TICK: Duration = Duration::from_secs(2);

/// Recall results as stored in `run_commands.result`, beside [`RECALLED`] and [`NOT_PENDING`]
/// (the answers of a local recall too).
const NOT_FOUND: &str = "not_found";

/// The approval rows as the broker's ledger.
struct StoreLedger(Store);

#[async_trait]
impl ApprovalLedger for StoreLedger {
    async fn requested(&self, id: Uuid, info: &ApprovalInfo) {
        let stored = match (Uuid::parse_str(&info.run_id), serde_json::to_string(info)) {
            (Ok(run), Ok(json)) => self.0.insert_approval(id, run, &json).await,
            _ => Ok(()),
        };
        if let Err(e) = stored {
            tracing::warn!(approval_id = %id, error = %e, "could not store the approval request: only this instance can decide it");
        }
    }

    async fn timed_out(&self, id: Uuid) -> Option<Decision> {
        match self.0.decide_approval(id, None, "timed_out", None).await {
            Ok(RowDecision::Taken(d, reason)) => Some(Decision {
                approve: d == "approved",
                reason,
            }),
            Ok(_) => None,
            Err(e) => {
                tracing::warn!(approval_id = %id, error = %e, "could not store the approval's timeout");
                None
            }
        }
    }
}

impl RunManager {
    /// Starts hearing the other instances (PostgreSQL only; nothing on SQLite): the process's
    /// one listener, approval rows for the broker, the task that does commands, and the one
    /// that hears which runs are followed elsewhere (`follow`).
    pub async fn listen_to_instances(self: &Arc<Self>) -> Result<(), RunError> {
        let Some(notifier) = self
            .store
            .listen(&[EVENTS_CHANNEL, COMMANDS_CHANNEL, FOLLOW_CHANNEL])
            .await?
        else {
            return Ok(());
        };
        self.approvals
            .set_ledger(Arc::new(StoreLedger(self.store.clone())));
        self.hear_followers(notifier.subscribe());
        let mut hints = notifier.subscribe();
        let _ = self.notifier.set(notifier);
        let me = self.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(COMMAND_TICK);
            loop {
                let only = tokio::select! {
                    hint = hints.recv() => match hint {
                        None => break,
                        Some(Hint::Notified { channel, payload }) if channel == COMMANDS_CHANNEL => {
                            match Uuid::parse_str(&payload) {
                                Ok(run) if me.live.contains_key(&run) => Some(run),
                                _ => continue,
                            }
                        }
                        Some(Hint::Notified { .. }) => continue,
                        Some(Hint::Missed) => None,
                    },
                    _ = tick.tick() => None,
                };
                me.do_commands(only).await;
            }
        });
        Ok(())
    }

    /// Does the pending commands of `only` (every live run when `None`) and delivers the
    /// decisions of this process's pending approvals.
    async fn do_commands(&self, only: Option<Uuid>) {
        if only.is_none() && self.live.is_empty() {
            return;
        }
        let _turn = self.command_turn.lock().await;
        let commands = match self.store.pending_commands(only).await {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!(error = %e, "cannot read pending commands");
                return;
            }
        };
        for c in commands {
            let live = self.live.get(&c.run_id).map(|l| l.clone());
            // An ending run's (its follow-ups closed) are left to its end (`settle_commands`).
            if let Some(live) = live.filter(|l| l.follow_ups.is_open()) {
                if let Err(e) = self.apply_command(&live, &c, false).await {
                    tracing::warn!(run_id = %c.run_id, seq = c.seq, error = %e, "command not done; retried");
                }
            }
        }
        self.deliver_decisions(only).await;
    }

    /// Decisions stored by reviewers on other instances, handed to the waiting hooks here.
    async fn deliver_decisions(&self, only: Option<Uuid>) {
        for (id, info) in self.approvals.list() {
            let wanted = only.is_none_or(|run| info.run_id == run.to_string());
            if !wanted {
                continue;
            }
            match self.store.approval_decision(id).await {
                Ok(Some((d, reason))) if d != "timed_out" => {
                    let _ = self.approvals.decide(id, d == "approved", reason);
                }
                Ok(_) => {}
                Err(e) => tracing::warn!(approval_id = %id, error = %e, "cannot read a decision"),
            }
        }
    }

    /// Takeover hook (docs/deployment.md: a command answered 202 is never lost): the pending commands
    /// of a run just resumed here. Cancels cancel it; interrupts are already queued again
    /// from the stored messages, so they are only marked done; recalls are answered. The
    /// previous owner's undecided approvals are closed (the resumed run asks again).
    pub async fn apply_pending_commands(&self, run_id: Uuid) -> Result<(), RunError> {
        let Some(live) = self.live.get(&run_id).map(|l| l.clone()) else {
            return Ok(());
        };
        let _turn = self.command_turn.lock().await;
        self.abandon_approvals(run_id).await?;
        for c in self.store.pending_commands(Some(run_id)).await? {
            self.apply_command(&live, &c, true).await?;
        }
        Ok(())
    }

    /// Closes the previous owner's undecided requests of a resumed run as `abandoned` (their
    /// hook is gone), keeping those the resumed run has already asked here.
    async fn abandon_approvals(&self, run_id: Uuid) -> Result<(), StoreError> {
        let run = run_id.to_string();
        let asked: Vec<Uuid> = self
            .approvals
            .list()
            .into_iter()
            .filter(|(_, info)| info.run_id == run)
            .map(|(id, _)| id)
            .collect();
        for id in self.store.undecided_approvals(run_id).await? {
            if !asked.contains(&id) {
                self.store
                    .decide_approval(id, None, "abandoned", None)
                    .await?;
            }
        }
        Ok(())
    }

    async fn apply_command(
        &self,
        live: &LiveRun,
        c: &RunCommand,
        resumed: bool,
    ) -> Result<(), StoreError> {
        match (c.kind, c.target) {
            (CommandKind::Cancel, _) => {
                if self.store.claim_command(c.seq, None).await? {
                    live.cancel.cancel();
                    tracing::info!(run_id = %live.id, "run cancellation requested through another instance");
                }
            }
            (CommandKind::Interrupt, Some(id)) => {
                if resumed {
                    // Queued again from the stored messages by the resume.
                    self.store.claim_command(c.seq, None).await?;
                    return Ok(());
                }
                let queue = self.queues.get(&live.conversation_id).map(|q| q.clone());
                let open = queue.as_ref().is_some_and(|q| q.is_open()) || live.follow_ups.is_open();
                // A closed run's are left to `settle_commands`, which takes them before its `done`.
                if !open || !self.store.claim_command(c.seq, None).await? {
                    return Ok(());
                }
                let content = c.content.clone().unwrap_or_default();
                let queued = queue.is_some_and(|q| q.push_with_id(id, content.clone()).is_ok());
                if !queued && !live.follow_ups.push(id, content) {
                    // It closed just now: kept in the conversation (a claimed one is not settled).
                    tracing::warn!(run_id = %live.id, interrupt_id = %id, "the run ended before an interrupt sent through another instance reached it");
                }
            }
            (CommandKind::Recall, Some(id)) => {
                let result = self.recall_in(Some(live), live.conversation_id, id).await?;
                self.store.claim_command(c.seq, Some(result)).await?;
            }
            (_, None) => {
                self.store.claim_command(c.seq, None).await?;
            }
        }
        Ok(())
    }

    /// Recalls interrupt `id` of the conversation from `live`'s queue or follow-ups: the
    /// stored result (`recalled`, `not_pending` or `not_found`).
    pub(in crate::runs) async fn recall_in(
        &self,
        live: Option<&LiveRun>,
        conversation_id: Uuid,
        id: Uuid,
    ) -> Result<&'static str, StoreError> {
        let late = live.is_some_and(|l| l.follow_ups.recall(id));
        let queue = self.queues.get(&conversation_id).map(|q| q.clone());
        if late || queue.is_some_and(|q| q.recall(id) == Recall::Recalled) {
            self.store.delete_message(conversation_id, id).await?;
            return Ok(RECALLED);
        }
        // Accepted once (it is stored): already drained. Never accepted: unknown.
        Ok(if self.store.has_message(conversation_id, id).await? {
            NOT_PENDING
        } else {
            NOT_FOUND
        })
    }

    /// At a run's end held back because commands were pending (the transaction that found
    /// them closed the door to new ones: `store/events/close.rs`): the commands not done yet
    /// are taken. Their interrupts are returned, to join the next run's query or
    /// `done.unprocessed_interrupts`; recalls are answered against them.
    pub(in crate::runs) async fn settle_commands(&self, live: &LiveRun) -> Vec<(Uuid, String)> {
        let commands = match self.store.pending_commands(Some(live.id)).await {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!(run_id = %live.id, error = %e, "cannot read the run's last commands");
                return Vec::new();
            }
        };
        // A command claimed twice takes effect once.
        let _turn = self.command_turn.lock().await;
        let mut late: Vec<(Uuid, String)> = Vec::new();
        for c in commands {
            let outcome = match (c.kind, c.target) {
                (CommandKind::Interrupt, Some(id)) => {
                    match self.store.claim_command(c.seq, None).await {
                        Ok(true) => {
                            late.push((id, c.content.clone().unwrap_or_default()));
                            Ok(true)
                        }
                        other => other,
                    }
                }
                (CommandKind::Recall, Some(id)) if late.iter().any(|(i, _)| *i == id) => {
                    late.retain(|(i, _)| *i != id);
                    let deleted = self.store.delete_message(live.conversation_id, id).await;
                    match deleted {
                        Ok(_) => self.store.claim_command(c.seq, Some(RECALLED)).await,
                        Err(e) => Err(e),
                    }
                }
                (CommandKind::Recall, Some(id)) => {
                    match self.recall_in(Some(live), live.conversation_id, id).await {
                        Ok(r) => self.store.claim_command(c.seq, Some(r)).await,
                        Err(e) => Err(e),
                    }
                }
                _ => self.store.claim_command(c.seq, None).await,
            };
            if let Err(e) = outcome {
                tracing::warn!(run_id = %live.id, seq = c.seq, error = %e, "cannot settle a command");
            }
        }
        late
    }
}
