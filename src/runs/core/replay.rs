//! Replaying stored events: a page at a time, read only as the subscriber consumes them, so
//! a client that connects to a long run's events and never reads holds one page, not the log.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use futures::stream::{self, BoxStream, StreamExt};
use uuid::Uuid;

use super::log::LoggedEvent;
use crate::store::Store;

/// Events read from the database per query of a replay.
pub const REPLAY_PAGE: usize = 256;

/// The stored events of `run_id` with ids in `(after, until]`, ascending. A failed read ends
/// the stream there (the client resumes with `Last-Event-ID`) rather than skip ids.
pub fn stored_events(
    store: Store,
    run_id: Uuid,
    after: u64,
    until: u64,
) -> BoxStream<'static, Arc<LoggedEvent>> {
    stored_events_until(store, run_id, after, until, Arc::default())
}

/// [`stored_events`], setting `complete` once everything stored in the range was read (not on
/// a failed read). Ids may have gaps (a crash, see `log.rs`): the end of the range is not
/// necessarily an id that exists.
pub fn stored_events_until(
    store: Store,
    run_id: Uuid,
    after: u64,
    until: u64,
    complete: Arc<AtomicBool>,
) -> BoxStream<'static, Arc<LoggedEvent>> {
    stream::unfold(Some(after), move |cursor| {
        let store = store.clone();
        let complete = complete.clone();
        async move {
            let Some(cursor) = cursor.filter(|c| *c < until) else {
                complete.store(true, Ordering::Relaxed);
                return None;
            };
            let after = i64::try_from(cursor).unwrap_or(i64::MAX);
            let page = match store
                .list_events_page(run_id, after, REPLAY_PAGE as i64)
                .await
            {
                Ok(page) => page,
                Err(e) => {
                    tracing::error!(%run_id, error = %e, "cannot read a run's stored events");
                    return None;
                }
            };
            let Some(last) = page.last().map(|e| e.seq as u64) else {
                complete.store(true, Ordering::Relaxed);
                return None;
            };
            // A short page is the end of what is stored (`until` marks the end too).
            let next = if page.len() == REPLAY_PAGE {
                last
            } else {
                until
            };
            let events: Vec<_> = page
                .into_iter()
                .filter(|e| e.seq as u64 <= until)
                .map(|e| Arc::new(LoggedEvent::stored(e.seq as u64, &e.name, e.data)))
                .collect();
            Some((stream::iter(events), Some(next)))
        }
    })
    .flatten()
    .boxed()
}
