//! The shared event writer's one transaction per tick: many runs' events, ceilings,
//! checkpoints and terminal states, fenced by lease epoch (docs/deployment.md), with one `pg_notify` per
//! committed batch.

use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, MutexGuard};

use sqlx::QueryBuilder;
use uuid::Uuid;

use super::{insert_rows, pack, Verified, EVENT_CHUNK};
use crate::domain::RunStatus;
use crate::store::binds::{insert_many, touch_conversations, CACHED_ROWS, MANY_ROWS};
use crate::store::conversations::{message_row, INSERT_MESSAGE_SQL};
use crate::store::models::{now, to_i64};
use crate::store::notify::EVENTS_CHANNEL;
use crate::store::runs::{FINISH_RUNS_SQL, RAISE_CEILING_SQL};
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
        // A run finishing in this batch needs no checkpoint: its terminal state clears it. The
        // others' are joined here, once per write, outside the transaction.
        let finishes = |b: &RunBatch| {
            b.finish
                .as_ref()
                .is_some_and(|f| f.finish.status != RunStatus::Running)
        };
        let joined: Vec<Option<String>> = batches
            .iter()
            .map(|b| {
                b.checkpoint
                    .as_ref()
                    .filter(|_| !finishes(b))
                    .map(|c| c.join())
            })
            .collect();
        let _turn = self.write_turn().await;
        let ids: Vec<String> = batches.iter().map(|b| b.run_id.to_string()).collect();
        let (_, micros) = now();
        let mut written = vec![Written::Stored(false); batches.len()];
        let lock = match self.backend {
            Backend::Postgres(_) => " FOR NO KEY UPDATE",
            Backend::Sqlite(_) => "",
        };
        with_writer!(self, |pool| {
            let mut tx = pool.begin().await?;
            // SQLite: how many epochs ever changed, read inside this transaction (fence.rs).
            let changes: Option<i64> = match &self.verified {
                Some(_) => Some(
                    sqlx::query_scalar("SELECT n FROM lease_changes")
                        .fetch_one(&mut *tx)
                        .await?,
                ),
                None => None,
            };
            let check = self.epochs_to_check(batches, &ids, changes);
            let mut epochs: HashMap<String, i64> = HashMap::new();
            for chunk in check.chunks(FENCE_CHUNK) {
                let mut q = QueryBuilder::new("SELECT id, lease_epoch FROM runs WHERE id IN (");
                let mut list = q.separated(", ");
                for id in chunk {
                    list.push_bind(*id);
                }
                q.push(") ORDER BY id").push(lock);
                let rows: Vec<(String, i64)> = q.build_query_as().fetch_all(&mut *tx).await?;
                epochs.extend(rows);
            }
            let fenced = |b: &RunBatch, id: &str| {
                b.epoch
                    .is_some_and(|ep| epochs.get(id).is_some_and(|stored| *stored != ep))
            };
            for (i, (b, id)) in batches.iter().zip(&ids).enumerate() {
                if fenced(b, id) {
                    written[i] = Written::Fenced;
                }
            }
            let keep: Vec<bool> = written.iter().map(|w| *w != Written::Fenced).collect();
            let kept = |i: usize| keep[i];
            let events: Vec<(&str, &StoredEvent)> = batches
                .iter()
                .zip(&ids)
                .enumerate()
                .filter(|(i, _)| kept(*i))
                .flat_map(|(_, (b, id))| b.events.iter().map(move |e| (id.as_str(), e)))
                .collect();
            let rows = pack(&events);
            // Only the runs whose batches are written here are named in the hint.
            let stored: Vec<String> = (0..ids.len())
                .filter(|i| kept(*i))
                .map(|i| ids[i].clone())
                .collect();
            let hint = (self.is_shared() && !stored.is_empty()).then(|| events_hint(&stored));
            for chunk in rows.chunks(EVENT_CHUNK) {
                insert_rows(chunk).build().execute(&mut *tx).await?;
            }
            let mut checkpoints: Vec<(&str, &str)> = Vec::new();
            for (i, (batch, run_id)) in batches.iter().zip(&ids).enumerate() {
                if !kept(i) {
                    continue;
                }
                if let Some(ceiling) = batch.ceiling {
                    sqlx::query(RAISE_CEILING_SQL)
                        .bind(ceiling)
                        .bind(run_id.as_str())
                        .execute(&mut *tx)
                        .await?;
                }
                if let Some(checkpoint) = &joined[i] {
                    checkpoints.push((run_id.as_str(), checkpoint.as_str()));
                }
            }
            for chunk in checkpoints.chunks(MANY_ROWS) {
                let mut q = QueryBuilder::new("UPDATE runs SET checkpoint = v.column2 FROM (");
                q.push_values(chunk, |mut row, (id, checkpoint)| {
                    row.push_bind(*id).push_bind(*checkpoint);
                });
                q.push(") AS v WHERE runs.id = v.column1 AND runs.status = 'running'");
                let cached = chunk.len() <= CACHED_ROWS;
                q.build().persistent(cached).execute(&mut *tx).await?;
            }
            // Terminal states: one statement for all of them; the runs it finished (still
            // `running` until then) get their answer and their conversation's `updated_at`.
            let finishing: Vec<(usize, &str, &FinalState)> = batches
                .iter()
                .zip(&ids)
                .enumerate()
                .filter(|(i, (b, _))| kept(*i) && finishes(b))
                .filter_map(|(i, (b, id))| b.finish.as_ref().map(|f| (i, id.as_str(), f)))
                .collect();
            let mut finished: HashSet<String> = HashSet::new();
            for chunk in finishing.chunks(MANY_ROWS) {
                let mut q = QueryBuilder::new(FINISH_RUNS_SQL);
                q.push_bind(micros).push(" FROM (");
                q.push_values(chunk, |mut row, (_, id, fin)| {
                    let f = &fin.finish;
                    row.push_bind(*id)
                        .push_bind(f.status.as_str())
                        .push_bind(i64::from(f.iterations))
                        .push_bind(i64::from(f.tool_calls))
                        .push_bind(to_i64(f.usage.prompt_tokens))
                        .push_bind(to_i64(f.usage.completion_tokens))
                        .push_bind(to_i64(f.usage.total_tokens))
                        .push_bind(to_i64(f.usage.llm_calls))
                        .push_bind(f.error.as_deref().map(crate::store::storable));
                });
                q.push(") AS v WHERE runs.id = v.column1 AND runs.status = 'running' RETURNING id");
                let cached = chunk.len() <= CACHED_ROWS;
                let done: Vec<String> = q
                    .build_query_scalar()
                    .persistent(cached)
                    .fetch_all(&mut *tx)
                    .await?;
                finished.extend(done);
            }
            let mut answers = Vec::new();
            let mut touched = Vec::new();
            for (i, id, fin) in &finishing {
                let stored = finished.contains(*id);
                written[*i] = Written::Stored(stored);
                if let (true, Some(answer)) = (stored, &fin.answer) {
                    let message_id = answer.id.unwrap_or_else(Uuid::new_v4).to_string();
                    answers.push(message_row(message_id, answer, micros));
                    touched.push(answer.conversation_id.to_string());
                }
            }
            insert_many!(tx, INSERT_MESSAGE_SQL, 7, answers, self.is_shared());
            touch_conversations!(tx, touched, micros);
            if let Some(payload) = &hint {
                // One hint per committed batch, sent at commit (docs/deployment.md).
                sqlx::query("SELECT pg_notify($1, $2)")
                    .bind(EVENTS_CHANNEL)
                    .bind(payload.as_str())
                    .execute(&mut *tx)
                    .await?;
            }
            tx.commit().await?;
            if let (Some(verified), Some(changes)) = (&self.verified, changes) {
                let ended: Vec<Uuid> = finishing.iter().map(|(i, ..)| batches[*i].run_id).collect();
                let checked: Vec<Uuid> = batches
                    .iter()
                    .zip(&ids)
                    .filter(|(b, id)| b.epoch.is_some_and(|ep| epochs.get(*id) == Some(&ep)))
                    .map(|(b, _)| b.run_id)
                    .collect();
                guard(verified).record(changes, &checked, &ended);
            }
        });
        Ok(written)
    }

    /// The runs of `batches` whose lease epochs this transaction must read, in one lock order
    /// for every writer: on SQLite those not verified under `changes` (fence.rs), else all.
    fn epochs_to_check<'a>(
        &self,
        batches: &[RunBatch],
        ids: &'a [String],
        changes: Option<i64>,
    ) -> Vec<&'a str> {
        let verified = self.verified.as_ref().zip(changes).map(|(v, changes)| {
            let mut v = guard(v);
            v.observe(changes);
            v
        });
        let mut check: Vec<&str> = batches
            .iter()
            .zip(ids)
            .filter(|(b, _)| b.epoch.is_some())
            .filter(|(b, _)| !verified.as_ref().is_some_and(|v| v.holds(&b.run_id)))
            .map(|(_, id)| id.as_str())
            .collect();
        check.sort_unstable();
        check
    }
}

fn guard(v: &Mutex<Verified>) -> MutexGuard<'_, Verified> {
    v.lock().unwrap_or_else(|p| p.into_inner())
}
