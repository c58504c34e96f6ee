//! A run whose writes keep failing because the database cannot write (a full disk, an I/O
//! error, a lost connection): it must end visibly rather than go on unsaved or stay `running`.
//!
//! After [`MAX_FAILURES`] such failures in a row the writer fires the run's [`Broken`] (the
//! run's task then ends the run, failed, saying why) and, once the run has ended, answers its
//! waiter so its stream gets `done`. The run stays tracked: its remaining events, `done` and
//! failed state are retried with the writer's back-off and stored as soon as writes commit
//! again. Only when the writer stops does it give such a run up.

use std::sync::{Arc, OnceLock};

use tokio_util::sync::CancellationToken;

use super::{PersistError, Tracked, MAX_FAILURES};
use crate::store::StoreError;

/// Fired (once) when a run's writes keep failing because the database cannot write.
#[derive(Clone, Debug, Default)]
pub struct Broken {
    token: CancellationToken,
    reason: Arc<OnceLock<String>>,
}

impl Broken {
    /// Resolves when the run's writes are given up as failing.
    pub async fn fired(&self) {
        self.token.cancelled().await
    }

    /// Why, once fired.
    pub fn reason(&self) -> Option<&str> {
        self.reason.get().map(String::as_str)
    }

    fn fire(&self, reason: String) {
        let _ = self.reason.set(reason);
        self.token.cancel();
    }
}

impl Tracked {
    /// The run's writes failed [`MAX_FAILURES`] times because the database cannot write: the
    /// run is told to end, and whoever waits for its end or a durable checkpoint is answered
    /// (the end stays to be written).
    pub(super) fn give_up_waiting(&mut self, e: &StoreError) {
        if !self.broken.token.is_cancelled() {
            tracing::error!(failures = MAX_FAILURES, error = %e, "the database cannot store this run's events: ending the run, failed");
            self.broken.fire(e.to_string());
        }
        // A durable checkpoint waited for will not come soon: its calls are not made.
        if let Some(tx) = self.checkpoint.as_mut().and_then(|c| c.waiter.take()) {
            let _ = tx.send(Err(PersistError::Failed(e.to_string())));
        }
        if let Some((_, waiter)) = &mut self.closing {
            if let Some(tx) = waiter.take() {
                let _ = tx.send(Err(PersistError::Failed(e.to_string())));
            }
        }
    }
}
