//! Reading a run's events: a live run's log followed until `done` (with what the log has
//! already released read back from the database), a finished run's replayed from the database
//! a page at a time (`replay`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use futures::stream::{self, BoxStream, StreamExt};
use uuid::Uuid;

use super::log::LoggedEvent;
use super::manager::{LiveRun, RunError, RunManager};
use super::replay::{stored_events, stored_events_until};
use crate::domain::RunStatus;
use crate::store::RunRow;

impl RunManager {
    /// The run as stored, with a live run's counters so far.
    pub async fn run(&self, owner: &str, run_id: Uuid) -> Result<RunRow, RunError> {
        let mut row = self
            .store
            .get_run(owner, run_id)
            .await?
            .ok_or(RunError::NotFound)?;
        if let Some(live) = self.live.get(&run_id).map(|l| l.clone()) {
            live.progress.apply(&mut row);
        }
        Ok(row)
    }

    /// The run's events after `after`: live ones follow until `done`, finished ones replay
    /// from the database.
    pub async fn events(
        &self,
        owner: &str,
        run_id: Uuid,
        after: u64,
    ) -> Result<BoxStream<'static, Arc<LoggedEvent>>, RunError> {
        if let Some(live) = self.live.get(&run_id).map(|l| l.clone()) {
            if live.owner != owner {
                return Err(RunError::NotFound);
            }
            return Ok(self.live_events(&live, after));
        }
        let row = self
            .store
            .get_run(owner, run_id)
            .await?
            .ok_or(RunError::NotFound)?;
        // Running on another instance (docs/deployment.md): followed from the database.
        if row.status == RunStatus::Running {
            if let Some(events) = self.followed(run_id, after) {
                return Ok(events);
            }
        }
        Ok(stored_events(self.store.clone(), run_id, after, u64::MAX))
    }

    /// A live run's events after `after`, following until `done`. Events the log has already
    /// released (persisted, and read by every reader then) come from the database first; if
    /// that read fails the stream ends there (a client resumes with `Last-Event-ID`) rather
    /// than skip ids.
    pub fn live_events(&self, live: &LiveRun, after: u64) -> BoxStream<'static, Arc<LoggedEvent>> {
        let sub = live.log.subscribe(after);
        let Some((from, to)) = sub.missing else {
            return sub.events;
        };
        // The stored part ends early only when a read fails: then nothing live may follow it,
        // or ids would be skipped.
        let complete = Arc::new(AtomicBool::new(false));
        let older = stored_events_until(self.store.clone(), live.id, from, to, complete.clone());
        let rest = stream::once(async move {
            if complete.load(Ordering::Relaxed) {
                sub.events
            } else {
                stream::empty().boxed()
            }
        })
        .flatten();
        older.chain(rest).boxed()
    }
}
