//! A facade's record of a run's request read back with the run, and a run's stored events:
//! what an API that keeps its own view of a run (the Responses API) reads to rebuild it.

use std::sync::Arc;

use futures::stream::BoxStream;
use uuid::Uuid;

use crate::runs::core::log::LoggedEvent;
use crate::runs::core::manager::{RunError, RunManager};
use crate::runs::core::replay::stored_events;
use crate::store::RunRow;

impl RunManager {
    /// `owner`'s run `run_id` (with a live run's counters) and the record a facade stored with
    /// it (`None`: the run was started without one). `NotFound` for another tenant's run.
    pub async fn run_with_record(
        &self,
        owner: &str,
        run_id: Uuid,
    ) -> Result<(RunRow, Option<String>), RunError> {
        let row = self.run(owner, run_id).await?;
        let record = self.store.response_request(run_id).await?;
        Ok((row, record))
    }

    /// The events stored so far of a run the caller has read ([`RunManager::run_with_record`]),
    /// after `after`, without following it.
    pub fn stored_events(&self, run_id: Uuid, after: u64) -> BoxStream<'static, Arc<LoggedEvent>> {
        stored_events(self.store.clone(), run_id, after, u64::MAX)
    }
}
