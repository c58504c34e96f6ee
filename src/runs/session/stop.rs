//! Stop: cancel a run and wait for its end — a run of this instance on its own completion, one
//! another instance runs through the cluster's cancel command and its followed events.

use std::time::Duration;

use futures::StreamExt;
use uuid::Uuid;

use crate::domain::RunStatus;
use crate::runs::core::manager::{RunError, RunManager};

/// How long a stop waits for a cancelled run to write its end.
pub const STOP_WAIT: Duration = Duration::from_secs(10);

impl RunManager {
    /// Cancels `owner`'s run `run_id` and waits (up to [`STOP_WAIT`]) until its end is stored;
    /// a finished run is left as it is. `NotFound` for another tenant's run, `Unavailable`
    /// when it did not stop in time.
    pub async fn stop_and_wait(&self, owner: &str, run_id: Uuid) -> Result<(), RunError> {
        let late = || RunError::Unavailable("the run did not stop in time; try again".into());
        if let Some(live) = self.live.get(&run_id).map(|l| l.clone()) {
            if live.owner != owner {
                return Err(RunError::NotFound);
            }
            live.cancel.cancel();
            return tokio::time::timeout(STOP_WAIT, live.finished())
                .await
                .map_err(|_| late());
        }
        let row = self
            .store
            .get_run(owner, run_id)
            .await?
            .ok_or(RunError::NotFound)?;
        if row.status != RunStatus::Running {
            return Ok(());
        }
        // Running, not here: another instance's (docs/deployment.md).
        if self.store.is_shared() {
            match self.cancel_elsewhere(run_id).await {
                Ok(()) | Err(RunError::Finished) => {}
                Err(e) => return Err(e),
            }
        }
        // Its events end with its `done` (or once its row is terminal).
        let mut events = self.events(owner, run_id, 0).await?;
        let drained = async { while events.next().await.is_some() {} };
        tokio::time::timeout(STOP_WAIT, drained)
            .await
            .map_err(|_| late())?;
        match self.store.get_run(owner, run_id).await? {
            Some(r) if r.status == RunStatus::Running => Err(late()),
            _ => Ok(()),
        }
    }
}
