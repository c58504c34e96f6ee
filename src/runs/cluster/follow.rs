//! The events of a run another instance owns (docs/deployment.md): what is stored, a page at a time,
//! then followed as the owner's writer commits more. Each committed batch sends one
//! `pg_notify` on [`EVENTS_CHANNEL`] naming its runs; a hint for this run (or an empty one,
//! "any run"), a [`Hint::Missed`], or a slow safety poll makes the follower read `seq > last`.
//! The follower watches its run's key ([`Watch`]): other runs' hints do not wake it.
//! The stream ends after `done`, or once the run's row is terminal and everything is read.
//!
//! So that this lags the owner's own stream by milliseconds rather than by the owner's write
//! interval, the follower asks the owner on [`FOLLOW_CHANNEL`] to write the run's events as
//! they come (`runs/core/persist/hot.rs`), and asks again every [`FOLLOW_RENEW`] (and after a
//! [`Hint::Missed`]: the ask may have been lost too) while it follows; the owner honours each ask
//! for [`FOLLOW_TTL`]. An ask is only a hint too: lost, the events come at the next tick.

use std::sync::{Arc, Weak};
use std::time::Duration;

use futures::stream::{self, BoxStream, StreamExt};
use tokio::time::Instant;
use uuid::Uuid;

use crate::domain::{EventName, RunStatus};
use crate::runs::core::log::LoggedEvent;
use crate::runs::core::manager::RunManager;
use crate::runs::core::replay::REPLAY_PAGE;
use crate::store::notify::{Hint, Subscription, Watch, EVENTS_CHANNEL, FOLLOW_CHANNEL};
use crate::store::Store;

/// Longest a follower waits without a hint before reading anyway (and checking the run).
pub const FOLLOW_POLL: Duration = Duration::from_secs(2);
/// How long an owner writes a followed run's events as they come after the latest ask.
pub const FOLLOW_TTL: Duration = Duration::from_secs(10);
/// How often a follower asks again: a third of the TTL, so one lost ask changes nothing.
pub const FOLLOW_RENEW: Duration = Duration::from_secs(3);

struct Follower {
    store: Store,
    run_id: Uuid,
    run: String,
    cursor: i64,
    /// Hints that name this run (`reagent_events`), not every run's.
    hints: Watch,
    /// `done` was read, or the run is terminal and its last read came back empty.
    ended: bool,
    /// The row was seen terminal: the next empty read ends the stream.
    terminal: bool,
    /// When to ask the owner again to write the run's events as they come.
    ask_at: Instant,
}

impl Follower {
    /// Asks the run's owner to write its events as they come, when the last ask is
    /// [`FOLLOW_RENEW`] old. A failure only costs latency: the events come at the next tick.
    async fn ask(&mut self) {
        let now = Instant::now();
        if now < self.ask_at {
            return;
        }
        self.ask_at = now + FOLLOW_RENEW;
        if let Err(e) = self.store.notify(FOLLOW_CHANNEL, &self.run).await {
            tracing::debug!(run_id = %self.run_id, error = %e, "cannot ask the owner to write a followed run's events at once");
        }
    }

    /// Until a hint for this run, or the safety poll (`true`: then check the row too).
    async fn wait(&mut self) -> Option<bool> {
        tokio::select! {
            hint = self.hints.next() => {
                if hint? {
                    // The owner may have missed the last ask as well.
                    self.ask_at = Instant::now();
                }
                Some(false)
            }
            _ = tokio::time::sleep(FOLLOW_POLL) => Some(true),
        }
    }

    /// The next page after the cursor, waiting for one; `None` at the end.
    async fn next_page(&mut self) -> Option<Vec<Arc<LoggedEvent>>> {
        loop {
            if self.ended {
                return None;
            }
            self.ask().await;
            let page = match self
                .store
                .list_events_page(self.run_id, self.cursor, REPLAY_PAGE as i64)
                .await
            {
                Ok(page) => page,
                Err(e) => {
                    tracing::error!(run_id = %self.run_id, error = %e, "cannot read a followed run's events");
                    return None;
                }
            };
            if let Some(last) = page.last() {
                self.cursor = last.seq;
                let done = EventName::Done.as_str();
                self.ended = page.iter().any(|e| e.name == done);
                let events = page
                    .into_iter()
                    .map(|e| Arc::new(LoggedEvent::stored(e.seq as u64, &e.name, e.data)))
                    .collect();
                return Some(events);
            }
            if self.terminal {
                return None;
            }
            let check = self.wait().await?;
            if check {
                // Terminal rows are written with their last events: one more read gets them.
                match self.store.get_run_any(self.run_id).await {
                    Ok(Some(r)) if r.status == RunStatus::Running => {}
                    Ok(_) => self.terminal = true,
                    Err(e) => {
                        tracing::warn!(run_id = %self.run_id, error = %e, "cannot read a followed run")
                    }
                }
            }
        }
    }
}

impl RunManager {
    /// The events after `after` of a run another instance runs, from the database, followed
    /// until its end; `None` when this process hears no other instances (SQLite: one process).
    pub(in crate::runs) fn followed(
        &self,
        run_id: Uuid,
        after: u64,
    ) -> Option<BoxStream<'static, Arc<LoggedEvent>>> {
        let run = run_id.to_string();
        let hints = self.notifier.get()?.watch(EVENTS_CHANNEL, &run);
        Some(followed_events(
            self.store.clone(),
            run_id,
            run,
            after,
            hints,
        ))
    }
}

/// The run's events after `after`, from the database, followed until its end.
fn followed_events(
    store: Store,
    run_id: Uuid,
    run: String,
    after: u64,
    hints: Watch,
) -> BoxStream<'static, Arc<LoggedEvent>> {
    let follower = Follower {
        store,
        run_id,
        run,
        cursor: i64::try_from(after).unwrap_or(i64::MAX),
        hints,
        ended: false,
        terminal: false,
        ask_at: Instant::now(),
    };
    stream::unfold(follower, |mut f| async move {
        let page = f.next_page().await?;
        Some((stream::iter(page), f))
    })
    .flatten()
    .boxed()
}

impl RunManager {
    /// Hears the asks of followers on other instances ([`FOLLOW_CHANNEL`]) and has this
    /// process's writer write those of the runs it owns as they come, for [`FOLLOW_TTL`].
    pub(in crate::runs) fn hear_followers(self: &Arc<Self>, mut hints: Subscription) {
        let me: Weak<Self> = Arc::downgrade(self);
        tokio::spawn(async move {
            while let Some(hint) = hints.recv().await {
                let Hint::Notified { channel, payload } = hint else {
                    continue;
                };
                if channel != FOLLOW_CHANNEL {
                    continue;
                }
                let Some(me) = me.upgrade() else { return };
                if let (Ok(run), Some(writer)) = (Uuid::parse_str(&payload), me.writer.get()) {
                    writer.heat(run, FOLLOW_TTL);
                }
            }
        });
    }
}
