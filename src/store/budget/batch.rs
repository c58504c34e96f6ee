//! Group commit of bookings: every [`Store::book`] joins one queue per store, and whoever gets the
//! turn (SQLite: the store's write gate; PostgreSQL: the queue's own gate, one booking
//! transaction at a time per instance) writes every booking queued meanwhile in ONE transaction.
//! Idle, a booking is written at once; under load, the calls of many runs share a transaction
//! instead of queueing one transaction each on the tenant's window row (its lock, or SQLite's one
//! writer). The windows are read locked and each reservation is checked in queue order against
//! the totals so far (`windows.rs`), so the limit holds exactly as it did one booking at a time.
//!
//! The write runs in its own task: a caller that goes away (its run cancelled) does not take the
//! others' bookings with it. A queued reservation whose caller has gone is not taken (nobody
//! would make the call); its settlements are still written. If the shared transaction fails,
//! each booking of it is tried alone, so one booking's error never fails another.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::oneshot;
use uuid::Uuid;

use super::books::{book_in, Books};
use super::sql::Deleted;
use super::windows::{decode_windows, Tally, WindowKey};
use super::{Asked, Booked, Settlement};
use crate::store::{with_writer, Store, StoreError};

/// Most bookings one transaction writes; the rest go in the next.
const MAX_BOOKINGS: usize = 256;

/// Window rows remembered as existing before one is forgotten (all are, past it).
const MAX_KNOWN: usize = 4096;

/// One booking waiting in the queue, and where its outcome goes.
#[derive(Debug)]
struct Queued {
    settle: Vec<Settlement>,
    reserve: Option<Asked>,
    end_of: Option<Uuid>,
    reply: oneshot::Sender<Result<Booked, StoreError>>,
}

impl Queued {
    /// The windows this booking touches before its run's released holds are known.
    fn keys(&self) -> impl Iterator<Item = WindowKey> + '_ {
        let spent = self.settle.iter().filter_map(|s| s.hold.as_ref());
        let spent = spent.flat_map(|h| {
            h.windows
                .iter()
                .map(|(k, s)| (h.tenant.clone(), k.clone(), *s))
        });
        let asked = self.reserve.iter().flat_map(|a| {
            a.limits
                .iter()
                .map(|l| (a.hold.tenant.clone(), l.kind.to_string(), l.starts_at))
        });
        spent.chain(asked)
    }
}

/// The queue of one store (shared by its clones).
#[derive(Default)]
pub(crate) struct Bookings {
    queue: Mutex<Vec<Queued>>,
    /// PostgreSQL's turn to write bookings (SQLite takes the store's write gate).
    gate: Arc<tokio::sync::Mutex<()>>,
    /// Window rows known to exist: the transaction need not insert them before locking them.
    known: Mutex<HashSet<WindowKey>>,
}

impl std::fmt::Debug for Bookings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bookings").finish_non_exhaustive()
    }
}

fn guard<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Bookings {
    /// The first [`MAX_BOOKINGS`] queued; a reservation whose caller has gone is dropped.
    fn take(&self) -> Vec<Queued> {
        let mut queue = guard(&self.queue);
        let n = queue.len().min(MAX_BOOKINGS);
        let mut batch: Vec<Queued> = queue.drain(..n).collect();
        drop(queue);
        for q in &mut batch {
            if q.reply.is_closed() {
                q.reserve = None;
            }
        }
        batch
    }

    fn unknown(&self, keys: &[WindowKey]) -> Vec<WindowKey> {
        let known = guard(&self.known);
        keys.iter()
            .filter(|k| !known.contains(*k))
            .cloned()
            .collect()
    }

    fn remember(&self, keys: Vec<WindowKey>) {
        let mut known = guard(&self.known);
        if known.len() + keys.len() > MAX_KNOWN {
            known.clear();
        }
        known.extend(keys);
    }
}

impl Store {
    /// Queues a booking and waits for it to be written, by this caller if it gets the turn
    /// first.
    pub(super) async fn book_grouped(
        &self,
        settle: Vec<Settlement>,
        reserve: Option<Asked>,
        end_of: Option<Uuid>,
    ) -> Result<Booked, StoreError> {
        let (reply, mut done) = oneshot::channel();
        guard(&self.bookings.queue).push(Queued {
            settle,
            reserve,
            end_of,
            reply,
        });
        let gate = match &self.write_gate {
            Some(g) => g.clone(),
            None => self.bookings.gate.clone(),
        };
        tokio::select! {
            biased;
            written = &mut done => return answered(written),
            turn = gate.lock_owned() => {
                let batch = self.bookings.take();
                if !batch.is_empty() {
                    let store = self.clone();
                    let task = tokio::spawn(async move {
                        store.write_bookings(batch).await;
                        drop(turn);
                    });
                    let _ = task.await;
                }
            }
        }
        // Ours was in our batch or an earlier one, answered before its writer let the turn go.
        answered(done.await)
    }

    async fn write_bookings(&self, batch: Vec<Queued>) {
        match self.book_batch(&batch).await {
            Ok(booked) => {
                for (q, b) in batch.into_iter().zip(booked) {
                    let _ = q.reply.send(Ok(b));
                }
            }
            Err(e) if batch.len() == 1 => {
                if let Some(q) = batch.into_iter().next() {
                    let _ = q.reply.send(Err(e));
                }
            }
            Err(_) => {
                for q in batch {
                    let alone = self.book_batch(std::slice::from_ref(&q)).await;
                    let _ = q.reply.send(alone.map(|mut b| b.remove(0)));
                }
            }
        }
    }

    /// One transaction of `batch` (see [`book_in!`]).
    async fn book_batch(&self, batch: &[Queued]) -> Result<Vec<Booked>, StoreError> {
        let books = Books {
            settle: batch.iter().flat_map(|q| &q.settle).collect(),
            ends: batch
                .iter()
                .filter_map(|q| q.end_of.map(|r| r.to_string()))
                .collect(),
            asked: batch.iter().filter_map(|q| q.reserve.as_ref()).collect(),
        };
        let micros = chrono::Utc::now().timestamp_micros();
        let (tally, deleted, keys, refused) = with_writer!(self, |pool| {
            let mut tx = pool.begin().await?;
            let booked = book_in!(self, tx, &books, micros);
            tx.commit().await?;
            booked
        });
        self.remember_windows(keys);
        Ok(outcomes(batch, &tally, &deleted, &refused))
    }

    /// The window rows of `keys` not known to exist yet (to insert before locking them).
    pub(in crate::store) fn unknown_windows(&self, keys: &[WindowKey]) -> Vec<WindowKey> {
        self.bookings.unknown(keys)
    }

    /// The window rows of `keys` exist (a transaction that touched them committed).
    pub(in crate::store) fn remember_windows(&self, keys: Vec<WindowKey>) {
        self.bookings.remember(keys);
    }

    pub(in crate::store) fn forget_windows(&self) {
        guard(&self.bookings.known).clear();
    }
}

fn answered(
    r: Result<Result<Booked, StoreError>, oneshot::error::RecvError>,
) -> Result<Booked, StoreError> {
    r.unwrap_or_else(|_| Err(StoreError::Database("budget booking lost".into())))
}

/// Each booking's outcome: its hold if granted, the totals of the windows it touched, the
/// holds of its run its end released (those no settlement of the batch named).
fn outcomes(
    batch: &[Queued],
    tally: &Tally,
    deleted: &[Deleted],
    refused: &[String],
) -> Vec<Booked> {
    let settled: HashSet<String> = batch
        .iter()
        .flat_map(|q| &q.settle)
        .filter_map(|s| s.hold.as_ref().map(|h| h.id.to_string()))
        .collect();
    let mut claimed: HashSet<&str> = HashSet::new();
    batch
        .iter()
        .map(|q| {
            let mut keys: Vec<WindowKey> = q.keys().collect();
            let mut released = 0;
            if let Some(run) = q.end_of.map(|r| r.to_string()) {
                for d in deleted.iter().filter(|d| d.run_id == run) {
                    if settled.contains(&d.id) || !claimed.insert(d.id.as_str()) {
                        continue;
                    }
                    released += 1;
                    let windows = decode_windows(&d.windows);
                    keys.extend(windows.into_iter().map(|(k, s)| (d.tenant.clone(), k, s)));
                }
            }
            let granted = q
                .reserve
                .as_ref()
                .filter(|a| !refused.contains(&a.hold.id.to_string()));
            Booked {
                hold: granted.map(|a| a.hold.clone()),
                totals: tally.totals(&keys),
                released,
            }
        })
        .collect()
}
