//! Leases on runs (docs/deployment.md): `runs.lease_owner` names the instance executing a running run,
//! `runs.lease_epoch` fences its writes (every write of the event writer is conditional on it,
//! see `events.rs`), `runs.lease_until` (µs since the Unix epoch; NULL = lapsed) is when another
//! instance may take it. The `instances` table is each live instance's heartbeat.
//!
//! Lease times are compared against the database's clock (instances' clocks differ); on SQLite
//! that is the local clock anyway. Taking lapsed runs is one `UPDATE … WHERE id IN (SELECT … FOR
//! UPDATE SKIP LOCKED)` on PostgreSQL, so concurrent sweepers never take the same run and never
//! wait for each other.

use std::sync::Arc;
use std::time::Duration;

use sqlx::{Database, Encode, QueryBuilder, Type};
use uuid::Uuid;

use super::models::{time, uuid};
use super::{with_pool, with_writer, Backend, InstanceRow, Store, StoreError, TakenRun};

/// Most `(run, epoch)` pairs in one statement (2 binds each).
const HELD_CHUNK: usize = 1000;

/// Who this store's new runs are leased to, and for how long (see [`Store::hold_leases_as`]).
#[derive(Clone, Debug)]
pub struct LeaseHolder {
    pub instance: String,
    pub ttl: Duration,
}

impl LeaseHolder {
    pub(super) fn ttl_micros(&self) -> i64 {
        micros(self.ttl)
    }
}

pub(super) fn micros(d: Duration) -> i64 {
    i64::try_from(d.as_micros()).unwrap_or(i64::MAX)
}

/// The database's current time in µs since the Unix epoch, as SQL.
const PG_NOW: &str = "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000000 AS BIGINT)";
const SQLITE_NOW: &str = "CAST((julianday('now') - 2440587.5) * 86400000000.0 AS INTEGER)";

/// `WITH v(id, ep) AS (VALUES …) UPDATE runs SET lease_until = …` over the runs `me` still
/// holds among `held`, by epoch: `until` is `now + ttl` (µs) or, when `None`, NULL (lapsed).
/// The rows are locked in id order first (`lock`, PostgreSQL), the order the event writer locks
/// them in, so a renewal and a write of the same runs cannot deadlock.
fn update_held<'a, DB>(
    held: &'a [(String, i64)],
    me: &'a str,
    now: &str,
    lock: &str,
    until: Option<i64>,
) -> QueryBuilder<DB>
where
    DB: Database,
    &'a str: Encode<'a, DB> + Type<DB>,
    i64: Encode<'a, DB> + Type<DB>,
{
    let mut q = QueryBuilder::new("WITH v(id, ep) AS (");
    q.push_values(held, |mut b, (id, ep)| {
        b.push_bind(id.as_str()).push_bind(*ep);
    });
    q.push(") UPDATE runs SET lease_until = ");
    match until {
        Some(ttl) => {
            q.push(now).push(" + ").push_bind(ttl);
        }
        None => {
            q.push("NULL");
        }
    }
    q.push(
        " WHERE id IN (SELECT r.id FROM runs r JOIN v ON v.id = r.id AND v.ep = r.lease_epoch \
         WHERE r.status = 'running' AND r.lease_owner = ",
    )
    .push_bind(me)
    .push(" ORDER BY r.id")
    .push(lock)
    .push(") RETURNING id");
    q
}

fn held_rows(held: &[(Uuid, i64)]) -> Vec<(String, i64)> {
    held.iter().map(|(id, ep)| (id.to_string(), *ep)).collect()
}

#[derive(sqlx::FromRow)]
struct InstanceRecord {
    id: String,
    started_at: i64,
    last_seen: i64,
    runs_owned: i64,
}

impl Store {
    /// Runs this store creates from now on are leased to `holder` (epoch 1, for its TTL).
    /// Without it (tests building a run manager by hand) they are created with a lapsed lease.
    pub fn hold_leases_as(&self, holder: LeaseHolder) {
        let _ = self.lease_holder.set(Arc::new(holder));
    }

    pub(super) fn lease_holder(&self) -> Option<&LeaseHolder> {
        self.lease_holder.get().map(|h| h.as_ref())
    }

    /// Locks the selected rows of `runs` (PostgreSQL; SQLite has one writer at a time).
    fn row_lock(&self) -> &'static str {
        match self.backend {
            Backend::Sqlite(_) => "",
            Backend::Postgres(_) => " FOR NO KEY UPDATE OF r",
        }
    }

    /// The database's clock as SQL (µs since the Unix epoch).
    pub(super) fn now_sql(&self) -> &'static str {
        match self.backend {
            Backend::Sqlite(_) => SQLITE_NOW,
            Backend::Postgres(_) => PG_NOW,
        }
    }

    /// Extends, for `ttl` from now, the leases `me` still holds among `held` (run, epoch):
    /// returns the runs renewed. A run missing from the answer was finished, deleted or taken.
    pub async fn renew_leases(
        &self,
        me: &str,
        held: &[(Uuid, i64)],
        ttl: Duration,
    ) -> Result<Vec<Uuid>, StoreError> {
        self.update_held(me, held, Some(micros(ttl))).await
    }

    /// Lets the leases `me` holds among `held` lapse now (SIGTERM hand-over): another
    /// instance's next sweep takes them.
    pub async fn release_leases(&self, me: &str, held: &[(Uuid, i64)]) -> Result<(), StoreError> {
        self.update_held(me, held, None).await?;
        Ok(())
    }

    async fn update_held(
        &self,
        me: &str,
        held: &[(Uuid, i64)],
        until: Option<i64>,
    ) -> Result<Vec<Uuid>, StoreError> {
        let _turn = self.write_turn().await;
        let mut out = Vec::new();
        for chunk in held.chunks(HELD_CHUNK) {
            let rows = held_rows(chunk);
            let ids: Vec<String> = with_writer!(self, |pool| {
                update_held(&rows, me, self.now_sql(), self.row_lock(), until)
                    .build_query_scalar::<String>()
                    .fetch_all(pool)
                    .await?
            });
            for id in ids {
                out.push(uuid(&id)?);
            }
        }
        Ok(out)
    }

    /// `(owner, epoch)` of each of `ids` that exists.
    pub async fn lease_states(
        &self,
        ids: &[Uuid],
    ) -> Result<Vec<(Uuid, Option<String>, i64)>, StoreError> {
        let mut out = Vec::new();
        for chunk in ids.chunks(HELD_CHUNK) {
            let rows: Vec<(String, Option<String>, i64)> = with_pool!(self, |pool| {
                let mut q = QueryBuilder::new(
                    "SELECT id, lease_owner, lease_epoch FROM runs WHERE id IN (",
                );
                let mut list = q.separated(", ");
                for id in chunk {
                    list.push_bind(id.to_string());
                }
                q.push(")");
                q.build_query_as().fetch_all(pool).await?
            });
            for (id, owner, epoch) in rows {
                out.push((uuid(&id)?, owner, epoch));
            }
        }
        Ok(out)
    }

    /// Takes up to `limit` running runs whose lease lapsed (or that never had one) for `me`
    /// with the next epoch, oldest first. On PostgreSQL rows another sweeper is taking are
    /// skipped, not waited for.
    pub async fn take_lapsed(
        &self,
        me: &str,
        ttl: Duration,
        limit: i64,
    ) -> Result<Vec<TakenRun>, StoreError> {
        let lock = match self.backend {
            Backend::Postgres(_) => " FOR UPDATE SKIP LOCKED",
            Backend::Sqlite(_) => "",
        };
        let now = self.now_sql();
        let sql = format!(
            "UPDATE runs SET lease_owner = $1, lease_epoch = lease_epoch + 1, closing = FALSE, \
             lease_until = {now} + $2 WHERE id IN (SELECT id FROM runs \
             WHERE status = 'running' AND (lease_until IS NULL OR lease_until < {now}) \
             ORDER BY started_at, id LIMIT $3{lock}) AND status = 'running' \
             RETURNING id, lease_epoch"
        );
        self.take(&sql, me, ttl, limit).await
    }

    /// Takes up to `limit` running runs still leased to `me` (a previous process under the
    /// same instance name, which is gone: this one is starting) with the next epoch, skipping
    /// rows a late transaction of that process still locks (the sweeper takes them once their
    /// lease lapses).
    pub async fn take_own(
        &self,
        me: &str,
        ttl: Duration,
        limit: i64,
    ) -> Result<Vec<TakenRun>, StoreError> {
        let lock = match self.backend {
            Backend::Postgres(_) => " FOR UPDATE SKIP LOCKED",
            Backend::Sqlite(_) => "",
        };
        let now = self.now_sql();
        let sql = format!(
            "UPDATE runs SET lease_owner = $1, lease_epoch = lease_epoch + 1, closing = FALSE, \
             lease_until = {now} + $2 WHERE id IN (SELECT id FROM runs \
             WHERE status = 'running' AND lease_owner = $1 \
             ORDER BY started_at, id LIMIT $3{lock}) AND status = 'running' \
             RETURNING id, lease_epoch"
        );
        self.take(&sql, me, ttl, limit).await
    }

    /// Takes the running run `id` for `me` whatever its lease (SQLite at start-up: one
    /// process, so every running run is a dead process's); `None` when it is not running.
    pub async fn take_run(
        &self,
        id: Uuid,
        me: &str,
        ttl: Duration,
    ) -> Result<Option<TakenRun>, StoreError> {
        let sql = format!(
            "UPDATE runs SET lease_owner = $1, lease_epoch = lease_epoch + 1, closing = FALSE, \
             lease_until = {} + $2 WHERE id = $3 AND status = 'running' \
             RETURNING id, lease_epoch",
            self.now_sql()
        );
        let _turn = self.write_turn().await;
        let row: Option<(String, i64)> = with_writer!(self, |pool| {
            sqlx::query_as(sqlx::AssertSqlSafe(sql.as_str()))
                .bind(me)
                .bind(micros(ttl))
                .bind(id.to_string())
                .fetch_optional(pool)
                .await?
        });
        Ok(row.map(|(_, epoch)| TakenRun { id, epoch }))
    }

    async fn take(
        &self,
        sql: &str,
        me: &str,
        ttl: Duration,
        limit: i64,
    ) -> Result<Vec<TakenRun>, StoreError> {
        let _turn = self.write_turn().await;
        let rows: Vec<(String, i64)> = with_writer!(self, |pool| {
            sqlx::query_as(sqlx::AssertSqlSafe(sql))
                .bind(me)
                .bind(micros(ttl))
                .bind(limit)
                .fetch_all(pool)
                .await?
        });
        rows.into_iter()
            .map(|(id, epoch)| {
                Ok(TakenRun {
                    id: uuid(&id)?,
                    epoch,
                })
            })
            .collect()
    }

    /// Records that instance `me` (started at `started_at`, µs) is alive now.
    pub async fn heartbeat(&self, me: &str, started_at: i64) -> Result<(), StoreError> {
        let sql = format!(
            "INSERT INTO instances (id, started_at, last_seen) VALUES ($1, $2, {}) \
             ON CONFLICT (id) DO UPDATE SET started_at = excluded.started_at, \
             last_seen = excluded.last_seen",
            self.now_sql()
        );
        let _turn = self.write_turn().await;
        with_writer!(self, |pool| {
            sqlx::query(sqlx::AssertSqlSafe(sql.as_str()))
                .bind(me)
                .bind(started_at)
                .execute(pool)
                .await?;
        });
        Ok(())
    }

    /// Instance `me` is leaving (SIGTERM).
    pub async fn remove_instance(&self, me: &str) -> Result<(), StoreError> {
        let _turn = self.write_turn().await;
        with_writer!(self, |pool| {
            sqlx::query("DELETE FROM instances WHERE id = $1")
                .bind(me)
                .execute(pool)
                .await?;
        });
        Ok(())
    }

    /// The instances seen within `alive_within`, by id, with the running runs they hold.
    pub async fn instances(&self, alive_within: Duration) -> Result<Vec<InstanceRow>, StoreError> {
        let sql = format!(
            "SELECT i.id, i.started_at, i.last_seen, (SELECT COUNT(*) FROM runs r \
             WHERE r.status = 'running' AND r.lease_owner = i.id) AS runs_owned \
             FROM instances i WHERE i.last_seen >= {} - $1 ORDER BY i.id",
            self.now_sql()
        );
        let records: Vec<InstanceRecord> = with_pool!(self, |pool| {
            sqlx::query_as(sqlx::AssertSqlSafe(sql.as_str()))
                .bind(micros(alive_within))
                .fetch_all(pool)
                .await?
        });
        records
            .into_iter()
            .map(|r| {
                Ok(InstanceRow {
                    id: r.id,
                    started_at: time(r.started_at)?,
                    last_seen: time(r.last_seen)?,
                    runs_owned: r.runs_owned,
                })
            })
            .collect()
    }
}
