//! The per-run event log (what SSE replays after the run or after a restart) and the tool
//! audit trail.
//!
//! The append path is hot — the shared event writer commits every few milliseconds — so a batch
//! is one transaction of multi-row INSERTs (one statement per [`EVENT_CHUNK`] events) rather
//! than a round trip per event. Re-appending an already stored `(run_id, seq)` is a no-op, so a
//! batch retried after an ambiguous failure cannot duplicate or fail.
//!
//! Rows are appended in insertion order and reach their run through `run_keys`, a small integer
//! per run that a trigger assigns when the run is inserted (migration
//! `20261130000000_events_by_run_key`): a commit then dirties the table's last pages and a few
//! pages of a compact `(run, seq)` index, instead of one page per live run of a table clustered
//! by the run's UUID.

use sqlx::{Database, Encode, QueryBuilder, Type};
use uuid::Uuid;

use super::conversations::{bind_message, INSERT_MESSAGE_SQL, TOUCH_CONVERSATION_SQL};
use super::models::{now, time, to_i64, uuid};
use super::runs::FINISH_RUN_SQL;
use super::{with_pool, with_writer, AuditRow, RunBatch, Store, StoreError, StoredEvent};
use crate::agent::events::RunStatus;

/// Rows per INSERT statement: 4 binds each keeps us far below SQLite's 32 766 and
/// PostgreSQL's 65 535 bind limits.
const EVENT_CHUNK: usize = 500;

/// One multi-row INSERT of `(run_id, event)` rows; already stored `(run, seq)` are skipped, and
/// so are the rows of a run that no longer exists.
///
/// The keys are found by ONE join of the VALUES list with `run_keys`: a scalar subquery per row
/// would open a cursor per row in the same statement, and SQLite's cursor bookkeeping makes that
/// quadratic in the rows of a statement (it tripled the writer's CPU at 500 rows).
fn insert_events<'a, DB>(rows: &'a [(&'a str, &'a StoredEvent)]) -> QueryBuilder<'a, DB>
where
    DB: Database,
    &'a str: Encode<'a, DB> + Type<DB>,
    i64: Encode<'a, DB> + Type<DB>,
{
    let mut insert = QueryBuilder::new(
        "INSERT INTO events (run, seq, name, data) \
         SELECT k.key, v.column2, v.column3, v.column4 FROM (",
    );
    insert.push_values(rows, |mut row, (run_id, event)| {
        row.push_bind(*run_id)
            .push_bind(event.seq)
            .push_bind(event.name.as_str())
            .push_bind(event.data.as_str());
    });
    // `WHERE true`: SQLite's grammar needs it between a join's ON and the upsert clause.
    insert.push(
        ") AS v JOIN run_keys k ON k.run_id = v.column1 WHERE true \
         ON CONFLICT (run, seq) DO NOTHING",
    );
    insert
}

#[derive(sqlx::FromRow)]
struct AuditRecord {
    run_id: String,
    conversation_id: String,
    call_id: String,
    tool: String,
    arguments: String,
    result_size: i64,
    duration_ms: i64,
    outcome: String,
    at: i64,
}

impl AuditRecord {
    fn into_model(self) -> Result<AuditRow, StoreError> {
        Ok(AuditRow {
            run_id: uuid(&self.run_id)?,
            conversation_id: uuid(&self.conversation_id)?,
            call_id: self.call_id,
            tool: self.tool,
            arguments: serde_json::from_str(&self.arguments)
                .map_err(|e| StoreError::Corrupt(format!("audit arguments: {e}")))?,
            result_size: self.result_size,
            duration_ms: self.duration_ms,
            outcome: self.outcome,
            at: time(self.at)?,
        })
    }
}

impl Store {
    /// Appends a batch of events of one run atomically. Already stored sequence numbers are
    /// skipped.
    pub async fn append_events(
        &self,
        run_id: Uuid,
        events: &[StoredEvent],
    ) -> Result<(), StoreError> {
        let _turn = self.write_turn().await;
        if events.is_empty() {
            return Ok(());
        }
        let run_id = run_id.to_string();
        let rows: Vec<(&str, &StoredEvent)> = events.iter().map(|e| (run_id.as_str(), e)).collect();
        with_writer!(self, |pool| {
            let mut tx = pool.begin().await?;
            for chunk in rows.chunks(EVENT_CHUNK) {
                insert_events(chunk).build().execute(&mut *tx).await?;
            }
            tx.commit().await?;
        });
        Ok(())
    }

    /// Commits the batches of many runs in ONE transaction (the shared event writer's tick):
    /// every event row (multi-row INSERTs across runs; already stored `(run, seq)` and the rows of
    /// runs that no longer exist skipped),
    /// then each terminal state with its answer message. A run's terminal state and its `done`
    /// event therefore become durable together or not at all. Returns, per batch, whether its
    /// terminal state was written by this call (`false` when it had none or the run was no
    /// longer `running`; the answer message is only stored when `true`).
    pub async fn write_runs(&self, batches: &[RunBatch]) -> Result<Vec<bool>, StoreError> {
        let _turn = self.write_turn().await;
        let ids: Vec<String> = batches.iter().map(|b| b.run_id.to_string()).collect();
        let rows: Vec<(&str, &StoredEvent)> = batches
            .iter()
            .zip(&ids)
            .flat_map(|(b, id)| b.events.iter().map(move |e| (id.as_str(), e)))
            .collect();
        let (_, micros) = now();
        let mut finished = vec![false; batches.len()];
        with_writer!(self, |pool| {
            let mut tx = pool.begin().await?;
            for chunk in rows.chunks(EVENT_CHUNK) {
                insert_events(chunk).build().execute(&mut *tx).await?;
            }
            for (i, (batch, run_id)) in batches.iter().zip(&ids).enumerate() {
                let Some(fin) = &batch.finish else { continue };
                let f = &fin.finish;
                if f.status == RunStatus::Running {
                    continue;
                }
                let updated = sqlx::query(FINISH_RUN_SQL)
                    .bind(f.status.as_str())
                    .bind(i64::from(f.iterations))
                    .bind(i64::from(f.tool_calls))
                    .bind(to_i64(f.usage.prompt_tokens))
                    .bind(to_i64(f.usage.completion_tokens))
                    .bind(to_i64(f.usage.total_tokens))
                    .bind(to_i64(f.usage.llm_calls))
                    .bind(f.error.as_deref().map(super::storable))
                    .bind(micros)
                    .bind(run_id.as_str())
                    .execute(&mut *tx)
                    .await?
                    .rows_affected();
                finished[i] = updated == 1;
                if let (true, Some(answer)) = (finished[i], &fin.answer) {
                    let id = answer.id.unwrap_or_else(Uuid::new_v4).to_string();
                    bind_message(sqlx::query(INSERT_MESSAGE_SQL), id, answer, micros)
                        .execute(&mut *tx)
                        .await?;
                    sqlx::query(TOUCH_CONVERSATION_SQL)
                        .bind(micros)
                        .bind(answer.conversation_id.to_string())
                        .execute(&mut *tx)
                        .await?;
                }
            }
            tx.commit().await?;
        });
        Ok(finished)
    }

    /// Events with `seq > after`, ascending.
    pub async fn list_events(
        &self,
        run_id: Uuid,
        after: i64,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        self.list_events_page(run_id, after, i64::MAX).await
    }

    /// At most `limit` events with `seq > after`, ascending: lets a replay of a long run stream
    /// page by page instead of loading everything.
    pub async fn list_events_page(
        &self,
        run_id: Uuid,
        after: i64,
        limit: i64,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        let events = with_pool!(self, |pool| {
            sqlx::query_as(
                "SELECT e.seq, e.name, e.data FROM events e JOIN run_keys k ON k.key = e.run \
                 WHERE k.run_id = $1 AND e.seq > $2 ORDER BY e.seq LIMIT $3",
            )
            .bind(run_id.to_string())
            .bind(after)
            .bind(limit.max(0))
            .fetch_all(pool)
            .await?
        });
        Ok(events)
    }

    /// The highest stored sequence number of the run, 0 when it has none.
    pub async fn last_event_seq(&self, run_id: Uuid) -> Result<i64, StoreError> {
        let seq: i64 = with_pool!(self, |pool| {
            sqlx::query_scalar(
                "SELECT COALESCE(MAX(e.seq), 0) FROM events e \
                 JOIN run_keys k ON k.key = e.run WHERE k.run_id = $1",
            )
            .bind(run_id.to_string())
            .fetch_one(pool)
            .await?
        });
        Ok(seq)
    }

    /// Records one tool call in the audit trail.
    pub async fn insert_audit(&self, row: AuditRow) -> Result<(), StoreError> {
        let _turn = self.write_turn().await;
        with_writer!(self, |pool| {
            sqlx::query(
                "INSERT INTO tool_audit (run_id, conversation_id, call_id, tool, arguments, \
                 result_size, duration_ms, outcome, at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
            )
            .bind(row.run_id.to_string())
            .bind(row.conversation_id.to_string())
            .bind(super::storable(&row.call_id))
            .bind(super::storable(&row.tool))
            .bind(row.arguments.to_string())
            .bind(row.result_size)
            .bind(row.duration_ms)
            .bind(&row.outcome)
            .bind(row.at.timestamp_micros())
            .execute(pool)
            .await?;
        });
        Ok(())
    }

    /// The audit rows of a run, in insertion order.
    pub async fn list_audit(&self, run_id: Uuid) -> Result<Vec<AuditRow>, StoreError> {
        let records: Vec<AuditRecord> = with_pool!(self, |pool| {
            sqlx::query_as(
                "SELECT run_id, conversation_id, call_id, tool, arguments, result_size, \
                 duration_ms, outcome, at FROM tool_audit WHERE run_id = $1 ORDER BY id",
            )
            .bind(run_id.to_string())
            .fetch_all(pool)
            .await?
        });
        records.into_iter().map(AuditRecord::into_model).collect()
    }
}
