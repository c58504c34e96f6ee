//! Commands for a run another instance owns (docs/deployment.md): `running` in the database but not
//! live here. They become rows the owner does (`commands`), answered 202 once stored; a
//! recall waits (bounded) for the owner's answer, since only the owner knows whether the
//! interrupt was drained; a delete waits for the run to end. PostgreSQL only: on SQLite the
//! one process owns every run.

use std::time::Duration;

use uuid::Uuid;

use crate::domain::{MessageKind, MessageRole, RunStatus};
use crate::runs::core::control::{Accepted, NOT_PENDING, RECALLED};
use crate::runs::core::manager::{RunError, RunManager};
use crate::store::{CommandKind, NewMessage};

/// How long a recall waits for the owner's answer before giving up with 503.
pub const RECALL_WAIT: Duration = Duration::from_secs(5);
/// How often a waiting request re-reads the row it waits on.
const POLL: Duration = Duration::from_millis(25);

impl RunManager {
    /// The conversation's run if it is running on another instance.
    pub(in crate::runs) async fn running_elsewhere(
        &self,
        conversation_id: Uuid,
    ) -> Result<Option<Uuid>, RunError> {
        if !self.store.is_shared() {
            return Ok(None);
        }
        let run = self.store.active_run_for(conversation_id).await?;
        Ok(run.filter(|r| !self.live.contains_key(r)))
    }

    /// Cancels a run that is `running` in the database and not live here.
    pub(in crate::runs) async fn cancel_elsewhere(&self, run_id: Uuid) -> Result<(), RunError> {
        match self
            .store
            .send_command(run_id, CommandKind::Cancel, None)
            .await?
        {
            Some(_) => {
                tracing::info!(%run_id, "run cancellation sent to the instance running it");
                Ok(())
            }
            None => Err(RunError::Finished),
        }
    }

    /// Stores the interrupt with its command for the owner of `run_id`: accepted once stored.
    pub(in crate::runs) async fn interrupt_elsewhere(
        &self,
        conversation_id: Uuid,
        run_id: Uuid,
        content: String,
    ) -> Result<Accepted, RunError> {
        let id = Uuid::new_v4();
        let message = NewMessage {
            id: Some(id),
            conversation_id,
            role: MessageRole::User,
            kind: MessageKind::Interrupt,
            content,
            run_id: Some(run_id),
            images: Vec::new(),
        };
        if !self.store.send_interrupt(run_id, message).await? {
            return Err(RunError::NoActiveRun);
        }
        // Whether the loop still takes it or it becomes the next run's query, only the owner
        // knows: `next_run` is reported false from here.
        Ok(Accepted {
            id,
            run_id,
            next_run: false,
        })
    }

    /// Asks the owner of `run_id` to recall interrupt `id` and waits for its answer. `None`
    /// when the run is not running any more (the caller answers from the stored messages).
    pub(in crate::runs) async fn recall_elsewhere(
        &self,
        run_id: Uuid,
        id: Uuid,
    ) -> Result<Option<()>, RunError> {
        let Some(seq) = self
            .store
            .send_command(run_id, CommandKind::Recall, Some(id))
            .await?
        else {
            return Ok(None);
        };
        let deadline = tokio::time::Instant::now() + RECALL_WAIT;
        loop {
            if let Some(result) = self.store.command_result(seq).await? {
                return match result.as_deref() {
                    Some(RECALLED) => Ok(Some(())),
                    Some(NOT_PENDING) => Err(RunError::NotPending),
                    _ => Err(RunError::NotFound),
                };
            }
            if tokio::time::Instant::now() >= deadline {
                // Withdrawn if the owner has not taken it yet, so it cannot take effect later.
                if self.store.claim_command(seq, None).await? {
                    return Err(RunError::Unavailable(
                        "the instance running this run did not answer the recall in time; try again".into(),
                    ));
                }
                continue;
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Cancels the conversation's run on another instance and waits (up to `wait`) for it to
    /// end; `false` when it did not.
    pub(in crate::runs) async fn stop_run_elsewhere(
        &self,
        conversation_id: Uuid,
        wait: Duration,
    ) -> Result<bool, RunError> {
        let Some(run_id) = self.running_elsewhere(conversation_id).await? else {
            return Ok(true);
        };
        match self.cancel_elsewhere(run_id).await {
            Ok(()) | Err(RunError::Finished) => {}
            Err(e) => return Err(e),
        }
        let deadline = tokio::time::Instant::now() + wait;
        while tokio::time::Instant::now() < deadline {
            let row = self.store.get_run_any(run_id).await?;
            if row.is_none_or(|r| r.status != RunStatus::Running) {
                return Ok(true);
            }
            tokio::time::sleep(POLL).await;
        }
        Ok(false)
    }
}
