//! The shared event writer's one transaction per tick: many runs' events, ceilings,
//! checkpoints and terminal states, fenced by lease epoch (docs/deployment.md), with one `pg_notify` per
//! committed batch; an ending run's budget settlements and the closing of its commands
//! (`close.rs`) go in the same transaction.

use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, MutexGuard};

use uuid::Uuid;

mod queries;

use queries::{checkpoints_query, epochs_query, finish_query};

use super::close::{asks_close, close_commands, close_query, closing_ids, hold, pending_query};
use super::{insert_rows, pack, Verified, EVENT_CHUNK};
use crate::domain::{EventName, RunStatus};
use crate::store::binds::{insert_many, touch_conversations, Arg, CACHED_ROWS, MANY_ROWS};
use crate::store::budget::{book_in, Books};
use crate::store::conversations::{message_row, INSERT_MESSAGE_SQL};
use crate::store::models::now;
use crate::store::notify::EVENTS_CHANNEL;
use crate::store::runs::RAISE_CEILING_SQL;
use crate::store::{
    with_writer, Backend, FinalState, RunBatch, Store, StoreError, StoredEvent, Written,
};

/// Most runs whose epoch one statement checks (one bind each).
const FENCE_CHUNK: usize = 1000;

/// Longest `pg_notify` payload sent; PostgreSQL refuses 8000 bytes and more.
const MAX_HINT_BYTES: usize = 7000;

/// The [`EVENTS_CHANNEL`] payload of a batch: its run ids, or "" ("any run") when too long.
fn events_hint(ids: &[String]) -> String {
    let payload = ids.join(",");
    if payload.len() > MAX_HINT_BYTES {
        String::new()
    } else {
        payload
    }
}

/// In the transaction `$tx`: SQLite's count of epoch changes (read inside the transaction,
/// see fence.rs; `None` on PostgreSQL) and the stored epochs of the runs to check, locked with
/// `$lock`. Evaluates to `(changes, epochs)`; `?` on a database error.
macro_rules! read_fence {
    ($store:expr, $tx:expr, $batches:expr, $ids:expr, $lock:expr) => {{
        let changes: Option<i64> = match &$store.verified {
            Some(_) => Some(
                sqlx::query_scalar("SELECT n FROM lease_changes")
                    .fetch_one(&mut *$tx)
                    .await?,
            ),
            None => None,
        };
        let check = $store.epochs_to_check($batches, $ids, changes);
        let mut epochs: HashMap<String, i64> = HashMap::new();
        for chunk in check.chunks(FENCE_CHUNK) {
            let mut q = epochs_query(chunk, $lock);
            let rows: Vec<(String, i64)> = q.build_query_as().fetch_all(&mut *$tx).await?;
            epochs.extend(rows);
        }
        (changes, epochs)
    }};
}

/// In the transaction `$tx`: the terminal states of `$finishing`, one statement per
/// [`MANY_ROWS`]; the runs it finished (still `running` until then) are marked in `$written`
/// and get their answer and their conversation's `updated_at`. `?` on a database error.
macro_rules! finish_runs {
    ($store:expr, $tx:expr, $finishing:expr, $written:expr, $micros:expr) => {{
        let mut finished: HashSet<String> = HashSet::new();
        for chunk in $finishing.chunks(MANY_ROWS) {
            let cached = chunk.len() <= CACHED_ROWS;
            let mut q = finish_query(chunk, $micros);
            let done: Vec<String> = q
                .build_query_scalar()
                .persistent(cached)
                .fetch_all(&mut *$tx)
                .await?;
            finished.extend(done);
        }
        let (answers, touched) = answers($finishing, &finished, $written, $micros);
        insert_many!($tx, INSERT_MESSAGE_SQL, answers, $store.is_shared());
        touch_conversations!($tx, touched, $micros);
    }};
}

impl Store {
    /// [`Store::write_batches`], answering per batch whether its terminal state was written
    /// by this call (a fenced batch: `false`).
    pub async fn write_runs(&self, batches: &[RunBatch]) -> Result<Vec<bool>, StoreError> {
        let written = self.write_batches(batches).await?;
        Ok(written
            .into_iter()
            .map(|w| w == Written::Stored(true))
            .collect())
    }

    /// Commits the batches of many runs in ONE transaction (the shared event writer's tick):
    /// every event row (multi-row INSERTs across runs; already stored `(run, seq)` and the rows of
    /// runs that no longer exist skipped), the raised event-id ceilings and new checkpoints,
    /// then each terminal state with its answer message. A run's terminal state and its `done`
    /// event therefore become durable together or not at all. Returns, per batch, whether its
    /// terminal state was written by this call (`Stored(false)` when it had none or the run was
    /// no longer `running`; the answer message is only stored with `Stored(true)`).
    ///
    /// Fencing (docs/deployment.md): the rows of the runs of batches with an `epoch` are locked first
    /// (PostgreSQL: `FOR NO KEY UPDATE`, so a takeover's epoch change waits for this commit or
    /// this transaction sees it); a batch whose run's epoch is no longer its own writes nothing
    /// and is answered [`Written::Fenced`].
    pub async fn write_batches(&self, batches: &[RunBatch]) -> Result<Vec<Written>, StoreError> {
        // Joined once per write, outside the transaction.
        let joined = joined_checkpoints(batches);
        let _turn = self.write_turn().await;
        let ids: Vec<String> = batches.iter().map(|b| b.run_id.to_string()).collect();
        let (_, micros) = now();
        let lock = match self.backend {
            Backend::Postgres(_) => " FOR NO KEY UPDATE",
            Backend::Sqlite(_) => "",
        };
        let written = with_writer!(self, |pool| {
            let mut tx = pool.begin().await?;
            let (changes, epochs) = read_fence!(self, tx, batches, &ids, lock);
            let mut written = fenced(batches, &ids, &epochs);
            close_commands!(self, tx, batches, &ids, &mut written);
            let rows = pack(&kept_events(batches, &ids, &written));
            let hint = self.hint(&ids, &written);
            for chunk in rows.chunks(EVENT_CHUNK) {
                insert_rows(chunk).build().execute(&mut *tx).await?;
            }
            for (ceiling, run_id) in ceilings(batches, &ids, &written) {
                sqlx::query(RAISE_CEILING_SQL)
                    .bind(ceiling)
                    .bind(run_id)
                    .execute(&mut *tx)
                    .await?;
            }
            let checkpoints = checkpoint_rows(&ids, &joined, &written);
            for chunk in checkpoints.chunks(MANY_ROWS) {
                let cached = chunk.len() <= CACHED_ROWS;
                let mut q = checkpoints_query(chunk);
                q.build().persistent(cached).execute(&mut *tx).await?;
            }
            let finishing = finishing(batches, &ids, &written);
            finish_runs!(self, tx, &finishing, &mut written, micros);
            let books = run_ends(batches, &ids, &written);
            let mut windows = Vec::new();
            if !books.is_empty() {
                (_, _, windows, _) = book_in!(self, tx, &books, micros);
            }
            if let Some(payload) = &hint {
                // One hint per committed batch, sent at commit (docs/deployment.md).
                sqlx::query("SELECT pg_notify($1, $2)")
                    .bind(EVENTS_CHANNEL)
                    .bind(payload.as_str())
                    .execute(&mut *tx)
                    .await?;
            }
            tx.commit().await?;
            self.record_verified(changes, batches, &ids, &epochs, &finishing);
            self.remember_windows(windows);
            written
        });
        Ok(written)
    }

    /// The [`EVENTS_CHANNEL`] payload of a write on PostgreSQL: only the runs whose batches
    /// are written are named.
    fn hint(&self, ids: &[String], written: &[Written]) -> Option<String> {
        let stored: Vec<String> = kept(written).map(|i| ids[i].clone()).collect();
        (self.is_shared() && !stored.is_empty()).then(|| events_hint(&stored))
    }

    /// After a commit on SQLite: the runs whose epochs this write checked hold them while
    /// the change count stays `changes`; the runs it finished need no check again.
    fn record_verified(
        &self,
        changes: Option<i64>,
        batches: &[RunBatch],
        ids: &[String],
        epochs: &HashMap<String, i64>,
        finishing: &[(usize, &str, &FinalState)],
    ) {
        let (Some(verified), Some(changes)) = (&self.verified, changes) else {
            return;
        };
        let ended: Vec<Uuid> = finishing.iter().map(|(i, ..)| batches[*i].run_id).collect();
        let checked: Vec<Uuid> = batches
            .iter()
            .zip(ids)
            .filter(|(b, id)| b.epoch.is_some_and(|ep| epochs.get(*id) == Some(&ep)))
            .map(|(b, _)| b.run_id)
            .collect();
        guard(verified).record(changes, &checked, &ended);
    }

    /// The runs of `batches` whose lease epochs this transaction must read, in one lock order
    /// for every writer: on SQLite those not verified under `changes` (fence.rs), else all;
    /// and the runs whose ends close their commands (`close.rs`), fenced or not.
    fn epochs_to_check<'a>(
        &self,
        batches: &[RunBatch],
        ids: &'a [String],
        changes: Option<i64>,
    ) -> Vec<&'a str> {
        let shared = self.is_shared();
        let verified = self.verified.as_ref().zip(changes).map(|(v, changes)| {
            let mut v = guard(v);
            v.observe(changes);
            v
        });
        let mut check: Vec<&str> = batches
            .iter()
            .zip(ids)
            .filter(|(b, _)| b.epoch.is_some() || asks_close(shared, b))
            .filter(|(b, _)| !verified.as_ref().is_some_and(|v| v.holds(&b.run_id)))
            .map(|(_, id)| id.as_str())
            .collect();
        check.sort_unstable();
        check
    }
}

/// Whether the batch ends its run: then it needs no checkpoint, its terminal state clears it.
fn finishes(b: &RunBatch) -> bool {
    b.finish
        .as_ref()
        .is_some_and(|f| f.finish.status != RunStatus::Running)
}

/// Each batch's checkpoint joined into the text stored, for the runs not finishing.
fn joined_checkpoints(batches: &[RunBatch]) -> Vec<Option<String>> {
    batches
        .iter()
        .map(|b| {
            b.checkpoint
                .as_ref()
                .filter(|_| !finishes(b))
                .map(|c| c.join())
        })
        .collect()
}

/// The indexes of the batches not fenced.
fn kept(written: &[Written]) -> impl Iterator<Item = usize> + '_ {
    (0..written.len()).filter(|i| written[*i] != Written::Fenced)
}

/// Per batch: [`Written::Fenced`] when its run's stored epoch is no longer the batch's, else
/// `Stored(false)` until its terminal state is written.
fn fenced(batches: &[RunBatch], ids: &[String], epochs: &HashMap<String, i64>) -> Vec<Written> {
    batches
        .iter()
        .zip(ids)
        .map(|(b, id)| {
            let moved = b
                .epoch
                .is_some_and(|ep| epochs.get(id).is_some_and(|stored| *stored != ep));
            if moved {
                Written::Fenced
            } else {
                Written::Stored(false)
            }
        })
        .collect()
}

/// The events of the batches not fenced, with their run ids; a held end's without `done`.
fn kept_events<'a>(
    batches: &'a [RunBatch],
    ids: &'a [String],
    written: &[Written],
) -> Vec<(&'a str, &'a StoredEvent)> {
    let done = EventName::Done.as_str();
    kept(written)
        .flat_map(|i| {
            let held = written[i] == Written::Held;
            let events = batches[i].events.iter();
            events
                .filter(move |e| !(held && e.name == done))
                .map(move |e| (ids[i].as_str(), e))
        })
        .collect()
}

/// The event-id ceilings to raise, `(ceiling, run id)`, in batch order.
fn ceilings<'a>(
    batches: &[RunBatch],
    ids: &'a [String],
    written: &[Written],
) -> Vec<(i64, &'a str)> {
    kept(written)
        .filter_map(|i| batches[i].ceiling.map(|c| (c, ids[i].as_str())))
        .collect()
}

/// The checkpoints to store, `(run id, joined checkpoint)`, in batch order.
fn checkpoint_rows<'a>(
    ids: &'a [String],
    joined: &'a [Option<String>],
    written: &[Written],
) -> Vec<(&'a str, &'a str)> {
    kept(written)
        .filter_map(|i| joined[i].as_deref().map(|c| (ids[i].as_str(), c)))
        .collect()
}

/// The terminal states to write, `(batch index, run id, state)`.
fn finishing<'a>(
    batches: &'a [RunBatch],
    ids: &'a [String],
    written: &[Written],
) -> Vec<(usize, &'a str, &'a FinalState)> {
    kept(written)
        .filter(|i| written[*i] != Written::Held && finishes(&batches[*i]))
        .filter_map(|i| batches[i].finish.as_ref().map(|f| (i, ids[i].as_str(), f)))
        .collect()
}

/// The budget bookings of the runs ending in this write (not fenced, not held back): their
/// calls not settled yet, and their other holds released.
fn run_ends<'a>(batches: &'a [RunBatch], ids: &[String], written: &[Written]) -> Books<'a> {
    let mut books = Books::default();
    for i in kept(written).filter(|i| written[*i] != Written::Held) {
        let Some(settle) = batches[i].finish.as_ref().and_then(|f| f.budget.as_ref()) else {
            continue;
        };
        books.settle.extend(settle);
        books.ends.push(ids[i].clone());
    }
    books
}

/// Marks the batches whose terminal state this write stored (`finished`), and returns the
/// answer messages of those runs and the conversations to touch.
fn answers<'a>(
    finishing: &[(usize, &str, &'a FinalState)],
    finished: &HashSet<String>,
    written: &mut [Written],
    micros: i64,
) -> (Vec<Vec<Arg<'a>>>, Vec<String>) {
    let mut answers = Vec::new();
    let mut touched = Vec::new();
    for (i, id, fin) in finishing {
        let stored = finished.contains(*id);
        written[*i] = Written::Stored(stored);
        if let (true, Some(answer)) = (stored, &fin.answer) {
            let message_id = answer.id.unwrap_or_else(Uuid::new_v4).to_string();
            answers.push(message_row(message_id, answer, micros));
            touched.push(answer.conversation_id.to_string());
        }
    }
    (answers, touched)
}

fn guard(v: &Mutex<Verified>) -> MutexGuard<'_, Verified> {
    v.lock().unwrap_or_else(|p| p.into_inner())
}
