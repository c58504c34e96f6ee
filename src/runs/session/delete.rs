//! Delete: one run, its events and the messages it wrote into its conversation, once it has
//! stopped writing.

use uuid::Uuid;

use crate::runs::core::manager::{RunError, RunManager};

impl RunManager {
    /// Deletes `owner`'s run `run_id` (a running one stopped first, [`RunManager::stop_and_wait`])
    /// with its events and the messages it wrote; `NotFound` for another tenant's or a missing
    /// run.
    pub async fn delete_run(&self, owner: &str, run_id: Uuid) -> Result<(), RunError> {
        self.stop_and_wait(owner, run_id).await?;
        match self.store.delete_run(owner, run_id).await? {
            true => Ok(()),
            false => Err(RunError::NotFound),
        }
    }
}
