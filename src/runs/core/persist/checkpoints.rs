//! The checkpoints [`EventWriter`] stores with a run's events: the latest one, written with the
//! next tick, or — durable — at once, its waiter told when it is committed. A call that must
//! not run twice is made only after the checkpoint listing it as in flight is durable, so a
//! run resumed elsewhere answers it as interrupted instead of calling it again.

use std::sync::Arc;

use tokio::sync::oneshot;
use uuid::Uuid;

use super::{EventWriter, PersistError, Tracked};
use crate::agent::checkpoint::CheckpointJson;

/// Who waits for a durable checkpoint.
pub(super) type CheckpointWaiter = oneshot::Sender<Result<(), PersistError>>;

/// A run's checkpoint not yet stored: written with the run's events up to `after`.
pub(super) struct PendingCheckpoint {
    pub after: u64,
    pub data: Arc<CheckpointJson>,
    pub waiter: Option<CheckpointWaiter>,
}

impl Tracked {
    /// Puts `new` in place of the pending checkpoint. One still waited for is told it was not
    /// stored (the loop waits for its durable checkpoint before taking another, so this is
    /// only a guard: its calls are then not made).
    fn replace_checkpoint(&mut self, new: PendingCheckpoint) {
        if let Some(old) = self.checkpoint.replace(new) {
            if let Some(tx) = old.waiter {
                let _ = tx.send(Err(PersistError::Failed(
                    "a newer checkpoint replaced it before it was stored".into(),
                )));
            }
        }
    }

    /// The pending checkpoint was committed by the write that stored `data`: its waiter, if
    /// any, is told (a newer one stays pending).
    pub(super) fn checkpoint_stored(&mut self, data: &Arc<CheckpointJson>) {
        if self
            .checkpoint
            .as_ref()
            .is_some_and(|c| Arc::ptr_eq(&c.data, data))
        {
            if let Some(tx) = self.checkpoint.take().and_then(|c| c.waiter) {
                let _ = tx.send(Ok(()));
            }
        }
    }

    /// The run is no longer written (`why`): whoever waits for its final write or a durable
    /// checkpoint is told.
    pub(super) fn give_up(self, why: impl Fn() -> PersistError) {
        if let Some(tx) = self.checkpoint.and_then(|c| c.waiter) {
            let _ = tx.send(Err(why()));
        }
        if let Some((_, Some(tx))) = self.closing {
            let _ = tx.send(Err(why()));
        }
    }
}

impl EventWriter {
    /// The run's loop took a checkpoint after event `after`: stored with the events up to it
    /// (a newer one replaces it if it is not written yet).
    pub fn checkpoint(&self, run_id: Uuid, after: u64, data: CheckpointJson) {
        if let Some(t) = self.lock().runs.get_mut(&run_id) {
            t.replace_checkpoint(PendingCheckpoint {
                after,
                data: Arc::new(data),
                waiter: None,
            });
        }
        self.wake.notify_one();
    }

    /// As [`Self::checkpoint`], written at once (with the run's events up to `after`, fenced
    /// by its lease epoch); resolves once committed, or with why it never will be
    /// ([`PersistError::Fenced`]: another instance owns the run).
    pub async fn checkpoint_durably(
        &self,
        run_id: Uuid,
        after: u64,
        data: CheckpointJson,
    ) -> Result<(), PersistError> {
        let (tx, rx) = oneshot::channel();
        {
            let mut st = self.lock();
            let t = st.writable(run_id)?;
            t.replace_checkpoint(PendingCheckpoint {
                after,
                data: Arc::new(data),
                waiter: Some(tx),
            });
        }
        self.wake.notify_one();
        self.urgent.notify_one();
        // Dropped unanswered: the run was forgotten (its task is being stopped).
        rx.await.unwrap_or(Err(PersistError::Stopped))
    }
}
