//! Commands to live runs: cancel, interrupts (queue and recall) and approval decisions. Each
//! checks the caller owns the run against the live state, which a pending interrupt or
//! approval implies exists, so no command reads the database to decide who may send it.

use uuid::Uuid;

use super::checks::{check_storable, check_text};
use super::manager::{RunError, RunManager};
use crate::agent::hooks::approval::ApprovalInfo;
use crate::agent::interrupts::Recall;
use crate::domain::{MessageKind, MessageRole};
use crate::store::NewMessage;

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
        check_text("content", &content, self.max_query_chars)?;
        self.owned(owner, conversation_id).await?;
        let (Some(queue), Some(run_id)) = (
            self.queues.get(&conversation_id).map(|q| q.clone()),
            self.active_run_of(conversation_id),
        ) else {
            return Err(RunError::NoActiveRun);
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
        let late = self
            .active_run_of(conversation_id)
            .and_then(|run_id| self.live_run(owner, run_id))
            .is_some_and(|live| live.follow_ups.recall(interrupt_id));
        let queue = self.queues.get(&conversation_id).map(|q| q.clone());
        let recalled = late || queue.is_some_and(|q| q.recall(interrupt_id) == Recall::Recalled);
        match recalled.then_some(Recall::Recalled) {
            Some(Recall::Recalled) => {
                self.store
                    .delete_message(conversation_id, interrupt_id)
                    .await?;
                Ok(())
            }
            // Accepted once (it is stored): already drained. Never accepted: unknown.
            _ if self
                .store
                .has_message(conversation_id, interrupt_id)
                .await? =>
            {
                Err(RunError::NotPending)
            }
            _ => Err(RunError::NotFound),
        }
    }

    /// True when the approval's run is a live run of `owner`'s (a pending approval's run is
    /// waiting on it, so it is live).
    fn approval_of(&self, owner: &str, info: &ApprovalInfo) -> bool {
        Uuid::parse_str(&info.run_id).is_ok_and(|id| self.live_run(owner, id).is_some())
    }

    /// `owner`'s pending approvals.
    pub fn approvals_of(&self, owner: &str) -> Vec<(Uuid, ApprovalInfo)> {
        let mut pending = self.approvals.list();
        pending.retain(|(_, info)| self.approval_of(owner, info));
        pending
    }

    /// Delivers a reviewer's decision on one of `owner`'s approvals; `NotFound` when it is
    /// unknown, already decided, timed out or another tenant's.
    pub fn decide_approval(
        &self,
        owner: &str,
        id: Uuid,
        approve: bool,
        reason: Option<String>,
    ) -> Result<ApprovalInfo, RunError> {
        check_storable("reason", reason.as_deref().unwrap_or_default())?;
        let info = self.approvals.get(id).ok_or(RunError::NotFound)?;
        if !self.approval_of(owner, &info) {
            return Err(RunError::NotFound);
        }
        self.approvals
            .decide(id, approve, reason)
            .map_err(|_| RunError::NotFound)?;
        tracing::info!(approval_id = %id, run_id = %info.run_id, approve, "approval decided");
        Ok(info)
    }
}
