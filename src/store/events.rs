//! The per-run event log (what SSE replays after the run or after a restart) and the tool
//! audit trail.
//!
//! The append path is hot — the run manager flushes a batch every few milliseconds — so a batch
//! is one transaction of multi-row INSERTs (one statement per [`EVENT_CHUNK`] events) rather
//! than a round trip per event. Re-appending an already stored `(run_id, seq)` is a no-op, so a
//! batch retried after an ambiguous failure cannot duplicate or fail.

use sqlx::QueryBuilder;
use uuid::Uuid;

use super::models::{time, uuid};
use super::{with_pool, AuditRow, Store, StoreError, StoredEvent};

/// Rows per INSERT statement: 4 binds each keeps us far below SQLite's 32 766 and
/// PostgreSQL's 65 535 bind limits.
const EVENT_CHUNK: usize = 500;

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
        if events.is_empty() {
            return Ok(());
        }
        let run_id = run_id.to_string();
        with_pool!(self, |pool| {
            let mut tx = pool.begin().await?;
            for chunk in events.chunks(EVENT_CHUNK) {
                let mut insert = QueryBuilder::new("INSERT INTO events (run_id, seq, name, data) ");
                insert.push_values(chunk, |mut row, event| {
                    row.push_bind(run_id.as_str())
                        .push_bind(event.seq)
                        .push_bind(event.name.as_str())
                        .push_bind(event.data.as_str());
                });
                insert.push(" ON CONFLICT (run_id, seq) DO NOTHING");
                insert.build().execute(&mut *tx).await?;
            }
            tx.commit().await?;
        });
        Ok(())
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
                "SELECT seq, name, data FROM events WHERE run_id = $1 AND seq > $2 \
                 ORDER BY seq LIMIT $3",
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
            sqlx::query_scalar("SELECT COALESCE(MAX(seq), 0) FROM events WHERE run_id = $1")
                .bind(run_id.to_string())
                .fetch_one(pool)
                .await?
        });
        Ok(seq)
    }

    /// Records one tool call in the audit trail.
    pub async fn insert_audit(&self, row: AuditRow) -> Result<(), StoreError> {
        with_pool!(self, |pool| {
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
