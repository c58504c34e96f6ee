//! Runs followed through another instance ("hot", docs/deployment.md): their new events are
//! written as soon as they come instead of at the next tick, so a client streaming such a run
//! from another instance sees each event a few milliseconds after the owner's clients do, not
//! up to a tick later. Runs nobody follows elsewhere keep the tick: a hot write carries only
//! the hot runs' events.
//!
//! - The following instance asks ([`EventWriter::heat`]) and asks again while it follows; the
//!   flag lapses after its TTL, so a follower that went away stops costing writes.
//! - Between two ticks, an append to a hot run wakes the writer ([`EventWriter::appended`]),
//!   which writes every hot run's pending events in one transaction, at most one per
//!   [`HOT_GAP`]; events appended while it is in flight share the next one.
//! - A hot write is planned and committed like a tick's (contiguous from the run's cursor,
//!   fenced by epoch, hinted at commit), so the writer's guarantees hold unchanged; a failed
//!   one is left to the regular tick and its back-off.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use uuid::Uuid;

use super::{Broken, EventWriter, Planned, State};

/// Shortest time between two hot writes: each is a commit, so a burst of tokens is batched
/// by this much at most (which also caps the extra transactions at 200 per second).
pub const HOT_GAP: Duration = Duration::from_millis(5);

/// A run's hot flag, read by its task at each append without taking the writer's lock.
#[derive(Clone, Debug, Default)]
pub struct Heat(Arc<AtomicBool>);

impl Heat {
    /// Whether another instance follows the run (until the writer sees the flag lapse).
    pub fn is_hot(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// What a run's task keeps from [`EventWriter::register_fenced`].
#[derive(Clone, Debug)]
pub struct Registered {
    /// Fired when the run's writes keep failing because the database cannot write.
    pub broken: Broken,
    /// Handed to [`EventWriter::appended`] after each append.
    pub heat: Heat,
}

impl EventWriter {
    /// New events were appended to the run whose flag is `heat`: the next tick will look, or
    /// a hot write right away when another instance follows the run.
    pub fn appended(&self, heat: &Heat) {
        self.wake.notify_one();
        if heat.is_hot() {
            self.hot.notify_one();
        }
    }

    /// Another instance follows the run for `ttl` from now (asking again renews it): its
    /// events are written as they come. `false` when this writer does not write the run (yet:
    /// the ask is kept for `ttl` anyway, for a run about to start or be taken over here).
    pub fn heat(&self, run_id: Uuid, ttl: Duration) -> bool {
        let mut st = self.lock();
        st.hot.insert(run_id, Instant::now() + ttl);
        let Some(t) = st.runs.get(&run_id) else {
            return false;
        };
        t.heat.0.store(true, Ordering::Relaxed);
        if t.log.len() as u64 > t.written {
            self.hot.notify_one();
        }
        true
    }

    /// How many of the runs this writer writes are followed through another instance now.
    pub fn followed_runs(&self) -> usize {
        let mut st = self.lock();
        st.expire(Instant::now());
        st.hot.keys().filter(|id| st.runs.contains_key(id)).count()
    }

    /// Hot writes committed so far (`reagent_followed_writes_total`).
    pub fn hot_writes(&self) -> u64 {
        self.hot_writes.load(Ordering::Relaxed)
    }

    /// What a hot write carries: the pending events of the runs still hot.
    fn plan_hot(&self) -> Vec<Planned> {
        let mut st = self.lock();
        st.expire(Instant::now());
        if st.hot.is_empty() {
            return Vec::new();
        }
        let ids: Vec<Uuid> = st
            .hot
            .keys()
            .filter(|id| st.runs.contains_key(id))
            .copied()
            .collect();
        st.plan_runs(ids)
    }

    /// Until `next_tick` (or an urgent write): hot writes as hot runs' events come, at most
    /// one per [`HOT_GAP`].
    pub(super) async fn between_ticks(&self, next_tick: Instant) {
        let mut gap_until = Instant::now();
        loop {
            // An urgent write first: it takes every run, the hot ones too, so under a stream of
            // run ends (which each ask for one) hot writes add no transactions.
            tokio::select! {
                biased;
                _ = self.urgent.notified() => return,
                _ = tokio::time::sleep_until(next_tick) => return,
                _ = self.hot.notified() => {}
            }
            if gap_until > Instant::now() {
                // Events appended meanwhile join this write.
                tokio::select! {
                    biased;
                    _ = self.urgent.notified() => return,
                    _ = tokio::time::sleep_until(next_tick) => return,
                    _ = tokio::time::sleep_until(gap_until) => {}
                }
            }
            let planned = self.plan_hot();
            if planned.is_empty() {
                continue;
            }
            gap_until = Instant::now() + HOT_GAP;
            if self.write(planned).await {
                self.hot_writes.fetch_add(1, Ordering::Relaxed);
            } else {
                // Failing writes wait for the tick and its back-off.
                tokio::select! {
                    _ = tokio::time::sleep_until(next_tick) => {}
                    _ = self.urgent.notified() => {}
                }
                return;
            }
        }
    }
}

impl State {
    /// Drops the asks that lapsed by `now`, clearing their runs' flags.
    fn expire(&mut self, now: Instant) {
        let runs = &self.runs;
        self.hot.retain(|id, until| {
            let keep = *until > now;
            if !keep {
                if let Some(t) = runs.get(id) {
                    t.heat.0.store(false, Ordering::Relaxed);
                }
            }
            keep
        });
    }

    /// The flag a run registered now starts with: set when it was asked for lately.
    pub(super) fn heat_of(&self, run_id: Uuid) -> Heat {
        let asked = self
            .hot
            .get(&run_id)
            .is_some_and(|until| *until > Instant::now());
        Heat(Arc::new(AtomicBool::new(asked)))
    }
}
