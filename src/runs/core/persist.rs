//! [`EventWriter`]: ONE writer per store that persists the event logs of all live runs.
//!
//! Every tick it takes, for each tracked run, the events appended since its last write (and, for
//! a run that has ended, its `done` event and terminal state) and commits them all in one
//! transaction ([`Store::write_runs`]). A per-run flush would cost one transaction per run per
//! tick, which SQLite's single writer cannot sustain for thousands of runs; one shared
//! transaction per tick costs the same whatever the number of runs.
//!
//! Guarantees:
//! - a run's events reach the database in id order with no gaps (its cursor only advances past
//!   a committed write, and a write takes a contiguous range starting at the cursor), so the
//!   stored log is always a prefix of the live log;
//! - the terminal state, the answer message and `done` are committed in the same transaction as
//!   the run's last events, so `done` is the last stored event, a finished run's log is complete,
//!   and a run is never `finished` in the database without its `done` (nor the reverse);
//! - the terminal state is written at most once (the SQL only updates a `running` row);
//! - event ids are reserved ahead of use: when a run's log has used half of its committed
//!   block, the next transaction also raises `runs.event_ceiling` to
//!   [`EVENT_ID_BLOCK`](crate::store::EVENT_ID_BLOCK) above its last id, and only after that
//!   commit may readers see ids up to it (ids are streamed before they are stored; recovery
//!   continues above the ceiling, so no id names two events);
//! - memory: the writer holds a cursor per run and at most [`MAX_ROWS_PER_TICK`] events per
//!   transaction (the events themselves live in the run's [`EventLog`] anyway); a run whose
//!   writes keep failing is dropped after [`MAX_FAILURES`] attempts (logged) so it cannot stall
//!   the others, which are retried on their own after a failed shared transaction — unless the
//!   database itself cannot write (a full disk, an I/O error, a lost connection): then the run
//!   is told to end, failed ([`Broken`]), its waiter is answered, and its end is still retried
//!   (with the writer's back-off) until it commits, so the run does not stay `running`;
//! - fencing (docs/deployment.md): a run registered with its lease epoch is written only while its row
//!   still has that epoch ([`Store::write_batches`]); once refused, nothing more of it is
//!   written, its waiter is told [`PersistError::Fenced`] and its `lost` token is cancelled, which
//!   stops the run's task (another instance owns the run now);
//! - a durable checkpoint ([`EventWriter::checkpoint_durably`], the one listing a call that must
//!   not run twice) is written at once, not at the next tick, fenced like the rest, and its
//!   waiter is told only once it is committed (or that it never will be);
//! - a run followed through another instance ([`EventWriter::heat`], `hot.rs`) has its new
//!   events written between ticks as they come, in transactions of their own that carry only
//!   such runs' events: the others' cost is unchanged.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::{oneshot, Notify};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use super::log::EventLog;
use crate::store::{FinalState, Store, StoredEvent};

/// Most event rows committed in one transaction; the rest wait for the next tick.
pub const MAX_ROWS_PER_TICK: usize = 20_000;
/// Consecutive failed writes after which a run's unwritten events are given up (and logged).
pub const MAX_FAILURES: u32 = 20;

/// Why a run's final write did not happen.
#[derive(Debug, thiserror::Error)]
pub enum PersistError {
    #[error("the event writer has stopped")]
    Stopped,
    #[error("giving up after {MAX_FAILURES} failed writes: {0}")]
    Failed(String),
    #[error("the run's lease was taken over by another instance: its writes are refused")]
    Fenced,
    /// Its end closed its commands and found some pending (`Written::Held`): its events are
    /// stored, its `done` is not; the run stays registered for the owner's next `finish`.
    #[error("commands sent through another instance are pending: the run's end is held back")]
    CommandsPending,
}

/// The lease a run is written under: its epoch, and the token cancelled when a write is
/// refused because the run's row has another epoch.
#[derive(Clone, Debug)]
pub struct Fence {
    pub epoch: i64,
    pub lost: CancellationToken,
}

struct Closing {
    done: StoredEvent,
    state: FinalState,
}

/// Who waits for a run's final write.
type Waiter = oneshot::Sender<Result<bool, PersistError>>;

struct Tracked {
    log: Arc<EventLog>,
    /// Highest event id known to be stored.
    written: u64,
    /// Set once the run has ended: its `done` event and terminal state, plus who waits.
    /// `None` once the waiter was answered although the write is still pending (see
    /// `broken.rs`).
    closing: Option<(Option<Closing>, Option<Waiter>)>,
    failures: u32,
    /// The run's latest checkpoint not yet stored: written with the events up to its id.
    checkpoint: Option<PendingCheckpoint>,
    fence: Option<Fence>,
    /// Fired when the run's writes keep failing because the database cannot write.
    broken: Broken,
    /// Set while another instance follows the run: its new events are written at once.
    heat: Heat,
}

#[derive(Default)]
struct State {
    runs: HashMap<Uuid, Tracked>,
    /// Runs refused by fencing, until their task is stopped ([`EventWriter::forget`]).
    fenced: std::collections::HashSet<Uuid>,
    /// Rotates the start of each tick's scan so a capped tick cannot starve a run.
    tick: usize,
    /// The runs followed through another instance (here or not), until when (see `hot.rs`).
    hot: HashMap<Uuid, Instant>,
    stopping: bool,
    stopped: bool,
}

impl State {
    /// The run's entry, when a write for it can still be asked for: the writer is running and
    /// the run is registered and not fenced.
    fn writable(&mut self, run_id: Uuid) -> Result<&mut Tracked, PersistError> {
        if self.stopped {
            return Err(PersistError::Stopped);
        }
        if self.fenced.contains(&run_id) {
            return Err(PersistError::Fenced);
        }
        self.runs
            .get_mut(&run_id)
            .ok_or_else(|| PersistError::Failed("run not registered".into()))
    }
}

/// The shared writer. [`EventWriter::run`] is its task; runs [`register`](Self::register),
/// call [`appended`](Self::appended) after appending, and end with [`finish`](Self::finish).
pub struct EventWriter {
    store: Store,
    state: Mutex<State>,
    wake: Notify,
    /// A run is waiting for a write (its final one, or a durable checkpoint): the next
    /// transaction starts without waiting out `interval` (the run is held back until then).
    urgent: Notify,
    /// A followed run has new events: written before the next tick (see `hot.rs`).
    hot: Notify,
    /// Shortest time between two transactions: events arriving meanwhile share the next one.
    interval: Duration,
    /// Transactions written early for followed runs so far (`reagent_followed_writes_total`).
    hot_writes: AtomicU64,
    /// Batches refused by fencing so far (`reagent_fenced_writes_total`).
    fenced: AtomicU64,
}

impl EventWriter {
    pub fn new(store: Store, interval: Duration) -> Arc<Self> {
        Arc::new(Self {
            store,
            state: Mutex::new(State::default()),
            wake: Notify::new(),
            urgent: Notify::new(),
            hot: Notify::new(),
            interval,
            hot_writes: AtomicU64::new(0),
            fenced: AtomicU64::new(0),
        })
    }

    /// Batches refused so far because their run's lease had moved on.
    pub fn fenced_writes(&self) -> u64 {
        self.fenced.load(Ordering::Relaxed)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Starts tracking a run's log (nothing of it is stored yet), written unconditionally.
    pub fn register(&self, run_id: Uuid, log: Arc<EventLog>) -> Registered {
        self.register_fenced(run_id, log, None)
    }

    /// Starts tracking a run's log, written only while the run's lease has `fence`'s epoch.
    /// The answer's `broken` fires when the run's writes keep failing because the database
    /// cannot write: the run should then end, failed (its end is still stored once writes
    /// commit again); its `heat` goes with each [`appended`](Self::appended).
    pub fn register_fenced(
        &self,
        run_id: Uuid,
        log: Arc<EventLog>,
        fence: Option<Fence>,
    ) -> Registered {
        let broken = Broken::default();
        let mut st = self.lock();
        let heat = st.heat_of(run_id);
        st.fenced.remove(&run_id);
        st.runs.insert(
            run_id,
            Tracked {
                // A resumed run's log starts above what is stored.
                written: log.released(),
                log,
                closing: None,
                failures: 0,
                checkpoint: None,
                fence,
                broken: broken.clone(),
                heat: heat.clone(),
            },
        );
        Registered { broken, heat }
    }

    /// New events were appended somewhere: the next tick will look (a run's own task calls
    /// [`appended`](Self::appended), which also honours its hot flag).
    pub fn notify(&self) {
        self.wake.notify_one();
    }

    /// Ends a run: writes its remaining events, then `done` (whose id must be the log's next
    /// id; it is appended to the live log by the caller only after this returns) with `state`,
    /// in one transaction; resolves once committed. `Ok(false)`: the run was no longer
    /// `running` in the database. [`PersistError::CommandsPending`]: `state` closed the run's
    /// commands and some were pending; `finish` again once they are done. With `None`, only
    /// flushes the remaining events.
    pub async fn finish(
        &self,
        run_id: Uuid,
        closing: Option<(StoredEvent, FinalState)>,
    ) -> Result<bool, PersistError> {
        let (tx, rx) = oneshot::channel();
        {
            let mut st = self.lock();
            let t = st.writable(run_id)?;
            t.closing = Some((
                closing.map(|(done, state)| Closing { done, state }),
                Some(tx),
            ));
        }
        self.wake.notify_one();
        self.urgent.notify_one();
        rx.await.unwrap_or(Err(PersistError::Stopped))
    }

    /// Asks the writer to exit once nothing is left to write.
    pub fn stop(&self) {
        self.lock().stopping = true;
        self.wake.notify_one();
    }

    /// The writer task: waits for news, writes a tick, keeps ticks `interval` apart.
    pub async fn run(self: Arc<Self>) {
        // Consecutive ticks with a failed write: the pause doubles with each (up to 64 ticks),
        // so a database outage of several seconds is ridden out before runs are given up.
        let mut failing = 0u32;
        loop {
            let planned = self.plan();
            if planned.is_empty() {
                if self.lock().stopping {
                    break;
                }
                self.wake.notified().await;
                continue;
            }
            let mut next_tick = tokio::time::Instant::now() + self.interval;
            if self.write(planned).await {
                failing = 0;
                // A run that ended meanwhile is written as soon as this write is done: ticks
                // batch the events of running runs, not the ends of finished ones. Followed
                // runs' new events are written meanwhile.
                self.between_ticks(next_tick).await;
            } else {
                failing += 1;
                next_tick += self.interval * (1u32 << failing.min(6));
                tokio::time::sleep_until(next_tick).await;
            }
        }
        let waiting: Vec<Tracked> = {
            let mut st = self.lock();
            st.stopped = true;
            st.runs.drain().map(|(_, t)| t).collect()
        };
        for t in waiting {
            t.give_up(|| PersistError::Stopped);
        }
    }

    /// Picks what the next transaction writes: every run's unwritten events (contiguous from
    /// its cursor, capped per tick), plus `done` and the terminal state of runs whose events
    /// are then all included.
    fn plan(&self) -> Vec<Planned> {
        let mut st = self.lock();
        let mut ids: Vec<Uuid> = st.runs.keys().copied().collect();
        if ids.is_empty() {
            return Vec::new();
        }
        st.tick = st.tick.wrapping_add(1);
        let shift = st.tick % ids.len();
        ids.rotate_left(shift);
        st.plan_runs(ids)
    }

    /// Stops writing a run (its task stopped without ending it: lease lost or handed over).
    pub fn forget(&self, run_id: Uuid) {
        let mut st = self.lock();
        st.runs.remove(&run_id);
        st.fenced.remove(&run_id);
    }
}

mod broken;
mod checkpoints;
mod hot;
mod outcome;
mod plan;

pub use broken::Broken;
use checkpoints::PendingCheckpoint;
pub use hot::{Heat, Registered, HOT_GAP};
use plan::Planned;
