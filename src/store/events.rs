//! The per-run event log (what SSE replays after the run or after a restart) and the tool
//! audit trail.
//!
//! The append path is hot — the shared event writer commits every few milliseconds — so a batch
//! is one transaction of multi-row INSERTs (one statement per [`EVENT_CHUNK`] rows) rather
//! than a round trip per event. Re-appending an already stored `(run_id, seq)` is a no-op, so a
//! batch retried after an ambiguous failure cannot duplicate or fail.
//!
//! Rows are appended in insertion order and reach their run through `run_keys`, a small integer
//! per run that a trigger assigns when the run is inserted (migration
//! `20261130000000_events_by_run_key`): a commit then dirties the table's last pages and a few
//! pages of a compact `(run, seq)` index, instead of one page per live run of a table clustered
//! by the run's UUID.
//!
//! A row holds `n` consecutive events of one run with the same name (migration
//! `20261201000000_packed_events`): a streamed answer's deltas, written a few per run per
//! commit, share one row instead of one row each. The row's `seq` is its first event's; the data
//! of its events are joined by `\n`, which one-line JSON never contains (an event whose data
//! has a newline gets a row of its own, `n = 1`, stored as is). Reading unpacks rows back into
//! events and skips any id already returned, so rows that overlap (a batch retried from a
//! different start) read as one log without duplicates.
//!
//! The shared event writer's fenced many-run transaction is in `events/write.rs`.

use std::borrow::Cow;

use sqlx::{Database, Encode, QueryBuilder, Type};
use uuid::Uuid;

use super::models::{time, uuid};
use super::{with_pool, with_writer, AuditRow, Store, StoreError, StoredEvent};

/// Rows per INSERT statement: 5 binds each keeps us far below SQLite's 32 766 and
/// PostgreSQL's 65 535 bind limits.
const EVENT_CHUNK: usize = 500;

/// Most events one row holds. Reading relies on it (a row holding event `s` starts after
/// `s - MAX_PACK`): it may only grow together with the read query's bound, which uses it.
const MAX_PACK: i64 = 64;

/// Most bytes of data one packed row holds, so a row stays within a database page; a single
/// event may be longer (it then has a row of its own).
const MAX_PACK_BYTES: usize = 4000;

/// One row of `events`: `n` consecutive events of one run, `seq ..= seq + n - 1`, one name.
struct Row<'a> {
    run_id: &'a str,
    seq: i64,
    n: i64,
    name: &'a str,
    data: Cow<'a, str>,
    /// More events may join (the row's data has no newline of its own).
    open: bool,
}

impl<'a> Row<'a> {
    fn new(run_id: &'a str, e: &'a StoredEvent) -> Self {
        Row {
            run_id,
            seq: e.seq,
            n: 1,
            name: &e.name,
            data: Cow::Borrowed(&e.data),
            open: !e.data.contains('\n'),
        }
    }

    /// Adds `e` if it is the run's next event, has the same name, and fits.
    fn join(&mut self, run_id: &str, e: &'a StoredEvent) -> bool {
        let fits = self.open
            && self.run_id == run_id
            && self.name == e.name
            && self.seq + self.n == e.seq
            && self.n < MAX_PACK
            && self.data.len() + 1 + e.data.len() <= MAX_PACK_BYTES
            && !e.data.contains('\n');
        if fits {
            let data = self.data.to_mut();
            data.push('\n');
            data.push_str(&e.data);
            self.n += 1;
        }
        fits
    }
}

/// Packs `(run_id, event)` pairs (each run's events ascending) into rows. An event whose id is
/// not above the previous one of the same run is dropped, as a stored one would be skipped: one
/// statement must not hold two rows for the same `(run, seq)`.
fn pack<'a>(events: &[(&'a str, &'a StoredEvent)]) -> Vec<Row<'a>> {
    let mut rows: Vec<Row<'a>> = Vec::new();
    for &(run_id, e) in events {
        if let Some(last) = rows.last_mut() {
            if last.run_id == run_id && e.seq < last.seq + last.n {
                continue;
            }
            if last.join(run_id, e) {
                continue;
            }
        }
        rows.push(Row::new(run_id, e));
    }
    rows
}

/// One multi-row INSERT of rows; already stored `(run, seq)` are skipped, and so are the rows
/// of a run that no longer exists. A row that starts where a stored one does and extends it
/// (the same events and more: a batch retried after an ambiguous commit, with the events that
/// arrived since) replaces it; a stored event is never rewritten.
///
/// The keys are found by ONE join of the VALUES list with `run_keys`: a scalar subquery per row
/// would open a cursor per row in the same statement, and SQLite's cursor bookkeeping makes that
/// quadratic in the rows of a statement (it tripled the writer's CPU at 500 rows).
fn insert_rows<'a, DB>(rows: &'a [Row<'a>]) -> QueryBuilder<DB>
where
    DB: Database,
    &'a str: Encode<'a, DB> + Type<DB>,
    i64: Encode<'a, DB> + Type<DB>,
{
    let mut insert = QueryBuilder::new(
        "INSERT INTO events (run, seq, n, name, data) \
         SELECT k.key, v.column2, v.column3, v.column4, v.column5 FROM (",
    );
    insert.push_values(rows, |mut b, row| {
        b.push_bind(row.run_id)
            .push_bind(row.seq)
            .push_bind(row.n)
            .push_bind(row.name)
            .push_bind(row.data.as_ref());
    });
    // `WHERE true`: SQLite's grammar needs it between a join's ON and the upsert clause.
    insert.push(
        ") AS v JOIN run_keys k ON k.run_id = v.column1 WHERE true \
         ON CONFLICT (run, seq) DO UPDATE SET n = excluded.n, data = excluded.data \
         WHERE excluded.n > events.n \
         AND substr(excluded.data, 1, length(events.data) + 1) = events.data || '\n'",
    );
    insert
}

/// A stored row as read back, before unpacking.
#[derive(sqlx::FromRow)]
struct PackedRecord {
    seq: i64,
    n: i64,
    name: String,
    data: String,
}

/// Unpacks `records` (ascending by `seq`) into the events after `*cursor`, advancing it; events
/// at or below it (overlapping rows) are skipped.
fn unpack(
    records: Vec<PackedRecord>,
    cursor: &mut i64,
    out: &mut Vec<StoredEvent>,
) -> Result<(), StoreError> {
    for r in records {
        if r.n == 1 {
            if r.seq > *cursor {
                *cursor = r.seq;
                out.push(StoredEvent {
                    seq: r.seq,
                    name: r.name,
                    data: r.data,
                });
            }
            continue;
        }
        let mut count = 0;
        for (i, data) in r.data.split('\n').enumerate() {
            count += 1;
            let seq = r.seq + i as i64;
            if seq > *cursor {
                *cursor = seq;
                out.push(StoredEvent {
                    seq,
                    name: r.name.clone(),
                    data: data.to_owned(),
                });
            }
        }
        if count != r.n {
            return Err(StoreError::Corrupt(format!(
                "event row at {} holds {count} events, not {}",
                r.seq, r.n
            )));
        }
    }
    Ok(())
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
        let events: Vec<(&str, &StoredEvent)> =
            events.iter().map(|e| (run_id.as_str(), e)).collect();
        let rows = pack(&events);
        with_writer!(self, |pool| {
            let mut tx = pool.begin().await?;
            for chunk in rows.chunks(EVENT_CHUNK) {
                insert_rows(chunk).build().execute(&mut *tx).await?;
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
        let limit = usize::try_from(limit).unwrap_or(0);
        let run_id = run_id.to_string();
        let mut events = Vec::new();
        let mut cursor = after;
        while events.len() < limit {
            // Rows holding an event after `cursor`: those starting within `MAX_PACK` of it
            // (the index range) whose last event is past it.
            let wanted = i64::try_from(limit - events.len()).unwrap_or(i64::MAX);
            let records: Vec<PackedRecord> = with_pool!(self, |pool| {
                sqlx::query_as(
                    "SELECT e.seq, e.n, e.name, e.data FROM events e \
                     JOIN run_keys k ON k.key = e.run \
                     WHERE k.run_id = $1 AND e.seq > $2 AND e.seq + e.n > $3 \
                     ORDER BY e.seq LIMIT $4",
                )
                .bind(run_id.as_str())
                .bind(cursor.saturating_sub(MAX_PACK))
                .bind(cursor.saturating_add(1))
                .bind(wanted)
                .fetch_all(pool)
                .await?
            });
            let complete = (records.len() as i64) < wanted;
            unpack(records, &mut cursor, &mut events)?;
            // A page of rows holds at least as many events as rows, unless rows overlap.
            if complete {
                break;
            }
        }
        events.truncate(limit);
        Ok(events)
    }

    /// The highest stored sequence number of the run, 0 when it has none.
    pub async fn last_event_seq(&self, run_id: Uuid) -> Result<i64, StoreError> {
        let seq: i64 = with_pool!(self, |pool| {
            sqlx::query_scalar(
                "SELECT COALESCE(MAX(e.seq + e.n - 1), 0) FROM events e \
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

mod close;
mod fence;
mod write;

pub(crate) use fence::Verified;

#[cfg(test)]
mod tests;
