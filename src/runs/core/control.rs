//! Commands to live runs: cancel, interrupts (queue and recall) and approval decisions. For a
//! run live here each checks the caller owns the run against the live state, which a pending
//! interrupt or approval implies exists; a run running on another instance (docs/deployment.md) is
//! checked against its rows and commanded through them (`cluster/remote.rs`).

use uuid::Uuid;

use super::checks::{check_storable, check_text};
use super::manager::{RunError, RunManager};
use crate::agent::hooks::approval::ApprovalInfo;
use crate::domain::{MessageKind, MessageRole, RunStatus};
use crate::store::{NewMessage, RowDecision};

/// The answers to a recall, as a command row stores them for a run another instance owns.
pub(in crate::runs) const RECALLED: &str = "recalled";
pub(in crate::runs) const NOT_PENDING: &str = "not_pending";

/// An accepted follow-up: `next_run` when it came after the loop closed and will be the query
/// of the run started when this one ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Accepted {
    pub id: Uuid,
    pub run_id: Uuid,
    pub next_run: bool,
}

impl RunManager {
    /// Cancels a run of this owner. `Finished` when it is no longer running.
    pub async fn cancel(&self, owner: &str, run_id: Uuid) -> Result<(), RunError> {
        if let Some(live) = self.live.get(&run_id).map(|l| l.clone()) {
            if live.owner != owner {
                return Err(RunError::NotFound);
            }
            if live.log.is_closed() {
                return Err(RunError::Finished);
            }
            live.cancel.cancel();
            tracing::info!(%run_id, "run cancellation requested");
            return Ok(());
        }
        match self.store.get_run(owner, run_id).await? {
            // Running, not here: another instance's (docs/deployment.md).
            Some(row) if row.status == RunStatus::Running && self.store.is_shared() => {
                self.cancel_elsewhere(run_id).await
            }
            Some(_) => Err(RunError::Finished),
            None => Err(RunError::NotFound),
        }
    }

    /// Queues an interrupt for the active run of `owner`'s conversation; persisted before it
    /// is accepted. Returns the interrupt's id and the run's.
    pub async fn interrupt(
        &self,
        owner: &str,
        conversation_id: Uuid,
        content: String,
    ) -> Result<Accepted, RunError> {
        check_text("content", &content, self.settings.max_query_chars)?;
        self.owned(owner, conversation_id).await?;
        let (Some(queue), Some(run_id)) = (
            self.queues.get(&conversation_id).map(|q| q.clone()),
            self.active_run_of(conversation_id),
        ) else {
            return match self.running_elsewhere(conversation_id).await? {
                Some(run_id) => {
                    self.interrupt_elsewhere(conversation_id, run_id, content)
                        .await
                }
                None => Err(RunError::NoActiveRun),
            };
        };
        let Some(live) = self.live_run(owner, run_id) else {
            return Err(RunError::NoActiveRun);
        };
        let id = Uuid::new_v4();
        self.store
            .add_message(NewMessage {
                id: Some(id),
                conversation_id,
                role: MessageRole::User,
                kind: MessageKind::Interrupt,
                content: content.clone(),
                run_id: Some(run_id),
                images: Vec::new(),
            })
            .await?;
        if queue.push_with_id(id, content.clone()).is_ok() {
            return Ok(Accepted {
                id,
                run_id,
                next_run: false,
            });
        }
        // The loop has closed (the answer is streaming): the next run's query.
        if live.follow_ups.push(id, content) {
            return Ok(Accepted {
                id,
                run_id,
                next_run: true,
            });
        }
        // The run ended meanwhile: not accepted, so not kept.
        self.store.delete_message(conversation_id, id).await?;
        Err(RunError::NoActiveRun)
    }

    /// Recalls a pending interrupt of `owner`'s conversation.
    pub async fn recall(
        &self,
        owner: &str,
        conversation_id: Uuid,
        interrupt_id: Uuid,
    ) -> Result<(), RunError> {
        self.owned(owner, conversation_id).await?;
        if self.active_run_of(conversation_id).is_none() {
            if let Some(run_id) = self.running_elsewhere(conversation_id).await? {
                if let Some(()) = self.recall_elsewhere(run_id, interrupt_id).await? {
                    return Ok(());
                }
            }
        }
        let live = self
            .active_run_of(conversation_id)
            .and_then(|run_id| self.live_run(owner, run_id));
        let _turn = self.command_turn.lock().await;
        match self
            .recall_in(live.as_deref(), conversation_id, interrupt_id)
            .await?
        {
            RECALLED => Ok(()),
            NOT_PENDING => Err(RunError::NotPending),
            _ => Err(RunError::NotFound),
        }
    }

    /// True when the approval's run is a live run of `owner`'s (a pending approval's run is
    /// waiting on it, so it is live).
    fn approval_of(&self, owner: &str, info: &ApprovalInfo) -> bool {
        Uuid::parse_str(&info.run_id).is_ok_and(|id| self.live_run(owner, id).is_some())
    }

    /// `owner`'s pending approvals: this process's, and (several instances) those stored by
    /// the owners of runs elsewhere.
    pub async fn approvals_of(&self, owner: &str) -> Result<Vec<(Uuid, ApprovalInfo)>, RunError> {
        let mut pending = self.approvals.list();
        pending.retain(|(_, info)| self.approval_of(owner, info));
        if !self.approvals.has_ledger() {
            return Ok(pending);
        }
        for row in self.store.pending_approvals(owner).await? {
            let (Ok(id), Ok(run)) = (Uuid::parse_str(&row.id), row.run()) else {
                continue;
            };
            if self.live.contains_key(&run) || pending.iter().any(|(p, _)| *p == id) {
                continue;
            }
            match serde_json::from_str::<ApprovalInfo>(&row.info) {
                Ok(info) => pending.push((id, info)),
                Err(e) => tracing::warn!(approval_id = %id, error = %e, "unreadable approval row"),
            }
        }
        Ok(pending)
    }

    /// Delivers a reviewer's decision on one of `owner`'s approvals; `NotFound` when it is
    /// unknown, already decided, timed out or another tenant's. With several instances the
    /// approval's row decides (once, whoever asks first) and wakes its run's owner.
    pub async fn decide_approval(
        &self,
        owner: &str,
        id: Uuid,
        approve: bool,
        reason: Option<String>,
    ) -> Result<(), RunError> {
        check_storable("reason", reason.as_deref().unwrap_or_default())?;
        let local = self.approvals.get(id);
        if local
            .as_ref()
            .is_some_and(|info| !self.approval_of(owner, info))
        {
            return Err(RunError::NotFound);
        }
        if self.approvals.has_ledger() {
            let decision = if approve { "approved" } else { "rejected" };
            match self
                .store
                .decide_approval(id, Some(owner), decision, reason.as_deref())
                .await?
            {
                RowDecision::Decided => {
                    // Here, or heard by its owner (who may also have read the row by now).
                    let _ = self.approvals.decide(id, approve, reason);
                    tracing::info!(approval_id = %id, approve, "approval decided");
                    return Ok(());
                }
                RowDecision::Taken(..) => return Err(RunError::NotFound),
                // Not stored (its write failed): only this process knows it.
                RowDecision::Missing => {}
            }
        }
        let info = local.ok_or(RunError::NotFound)?;
        self.approvals
            .decide(id, approve, reason)
            .map_err(|_| RunError::NotFound)?;
        tracing::info!(approval_id = %id, run_id = %info.run_id, approve, "approval decided");
        Ok(())
    }
}
