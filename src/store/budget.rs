//! Budget windows, reservations and the usage ledger (docs/configuration.md `[[budgets]]`).
//!
//! A call reserves its worst case in each window of its tenant with ONE conditional upsert per
//! window (`spent + reserved + x <= limit`), which PostgreSQL re-checks on the latest row
//! version after waiting for a concurrent writer's lock, and SQLite runs one writer at a time:
//! instances sharing a database never admit more than the limit plus the reservations in flight.
//! The hold row that goes with it is what settlement (or recovery, for a dead process's calls)
//! releases, exactly once: whoever deletes the hold gives its reservation back.

use uuid::Uuid;

use super::models::now;
use super::{with_pool, with_writer, Store, StoreError};

/// One window a call reserves in, with its limits (`None`: no limit of that kind).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WindowLimit {
    pub kind: &'static str,
    /// µs since the Unix epoch.
    pub starts_at: i64,
    pub tokens: Option<i64>,
    pub nanos: Option<i64>,
}

/// A reservation that was granted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hold {
    pub id: Uuid,
    pub tenant: String,
    /// The windows reserved in: (kind, starts_at).
    pub windows: Vec<(String, i64)>,
    pub tokens: i64,
    pub nanos: i64,
}

/// What a call used, to record.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CallUsage {
    pub tenant: String,
    pub run_id: Uuid,
    pub model: String,
    pub agent: String,
    pub prompt_tokens: i64,
    pub completion_tokens: i64,
    pub cache_read_tokens: i64,
    pub cache_write_tokens: i64,
    pub cost_nanos: i64,
    pub unpriced: bool,
}

/// A window's totals after a settlement.
#[derive(Clone, Debug, PartialEq, Eq, sqlx::FromRow)]
pub struct WindowSpend {
    pub window_kind: String,
    pub starts_at: i64,
    pub spent_tokens: i64,
    pub spent_nanos: i64,
    pub reserved_tokens: i64,
    pub reserved_nanos: i64,
    pub warned: i64,
}

/// The conditional reservation of one window. Binds: tenant, kind, starts_at, tokens, nanos,
/// token limit, nano limit. The first reservation of a window inserts its row (if it fits at
/// all); later ones add to it only while the sum stays within each limit.
const RESERVE_SQL: &str = "INSERT INTO budget_windows \
     (tenant, window_kind, starts_at, reserved_tokens, reserved_nanos) \
     SELECT $1, $2, $3, $4, $5 WHERE ($6 IS NULL OR $4 <= $6) AND ($7 IS NULL OR $5 <= $7) \
     ON CONFLICT (tenant, window_kind, starts_at) DO UPDATE SET \
     reserved_tokens = budget_windows.reserved_tokens + excluded.reserved_tokens, \
     reserved_nanos = budget_windows.reserved_nanos + excluded.reserved_nanos \
     WHERE ($6 IS NULL OR budget_windows.spent_tokens + budget_windows.reserved_tokens \
     + excluded.reserved_tokens <= $6) \
     AND ($7 IS NULL OR budget_windows.spent_nanos + budget_windows.reserved_nanos \
     + excluded.reserved_nanos <= $7)";

/// Gives a reservation back and adds what was spent. Binds: spent tokens, spent nanos,
/// reserved tokens, reserved nanos, tenant, kind, starts_at.
const SETTLE_SQL: &str = "UPDATE budget_windows SET spent_tokens = spent_tokens + $1, \
     spent_nanos = spent_nanos + $2, reserved_tokens = reserved_tokens - $3, \
     reserved_nanos = reserved_nanos - $4 \
     WHERE tenant = $5 AND window_kind = $6 AND starts_at = $7";

fn encode_windows(windows: &[(String, i64)]) -> String {
    let parts: Vec<String> = windows.iter().map(|(k, s)| format!("{k}:{s}")).collect();
    parts.join(",")
}

fn decode_windows(text: &str) -> Vec<(String, i64)> {
    text.split(',')
        .filter_map(|p| {
            let (k, s) = p.split_once(':')?;
            Some((k.to_string(), s.parse().ok()?))
        })
        .collect()
}

impl Store {
    /// Reserves `tokens` and `nanos` in every window of `windows` for a call of `run_id`, or
    /// nothing (`None`) when one of them cannot take it.
    pub async fn reserve_budget(
        &self,
        tenant: &str,
        run_id: Uuid,
        windows: &[WindowLimit],
        tokens: i64,
        nanos: i64,
    ) -> Result<Option<Hold>, StoreError> {
        let id = Uuid::new_v4();
        let keys: Vec<(String, i64)> = windows
            .iter()
            .map(|w| (w.kind.to_string(), w.starts_at))
            .collect();
        let _turn = self.write_turn().await;
        let (_, micros) = now();
        let granted = with_writer!(self, |pool| {
            let mut tx = pool.begin().await?;
            let mut all = true;
            // A fixed order (the caller's: day, week, month) so two calls never wait on each
            // other's rows in opposite orders.
            for w in windows {
                let done = sqlx::query(RESERVE_SQL)
                    .bind(tenant)
                    .bind(w.kind)
                    .bind(w.starts_at)
                    .bind(tokens)
                    .bind(nanos)
                    .bind(w.tokens)
                    .bind(w.nanos)
                    .execute(&mut *tx)
                    .await?
                    .rows_affected();
                if done == 0 {
                    all = false;
                    break;
                }
            }
            if all {
                sqlx::query(
                    "INSERT INTO budget_holds (id, run_id, tenant, windows, tokens, nanos, \
                     created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)",
                )
                .bind(id.to_string())
                .bind(run_id.to_string())
                .bind(tenant)
                .bind(encode_windows(&keys))
                .bind(tokens)
                .bind(nanos)
                .bind(micros)
                .execute(&mut *tx)
                .await?;
                tx.commit().await?;
            } else {
                tx.rollback().await?;
            }
            all
        });
        Ok(granted.then(|| Hold {
            id,
            tenant: tenant.to_string(),
            windows: keys,
            tokens,
            nanos,
        }))
    }

    /// Settles a call: its hold (if still there) is given back, what it used is added to its
    /// windows and recorded in the usage ledger. Returns the windows' totals after it.
    pub async fn settle_budget(
        &self,
        hold: Option<&Hold>,
        usage: &CallUsage,
    ) -> Result<Vec<WindowSpend>, StoreError> {
        let spent = usage.prompt_tokens.saturating_add(usage.completion_tokens);
        let _turn = self.write_turn().await;
        let (_, micros) = now();
        let totals = with_writer!(self, |pool| {
            let mut tx = pool.begin().await?;
            let mut totals = Vec::new();
            if let Some(h) = hold {
                let held = sqlx::query("DELETE FROM budget_holds WHERE id = $1")
                    .bind(h.id.to_string())
                    .execute(&mut *tx)
                    .await?
                    .rows_affected();
                // Released already (recovery thought the call dead): only the spend is added.
                let (rt, rn) = if held == 1 {
                    (h.tokens, h.nanos)
                } else {
                    (0, 0)
                };
                for (kind, starts_at) in &h.windows {
                    sqlx::query(SETTLE_SQL)
                        .bind(spent)
                        .bind(usage.cost_nanos)
                        .bind(rt)
                        .bind(rn)
                        .bind(&h.tenant)
                        .bind(kind)
                        .bind(starts_at)
                        .execute(&mut *tx)
                        .await?;
                }
                let mut q = sqlx::QueryBuilder::new(
                    "SELECT window_kind, starts_at, spent_tokens, spent_nanos, reserved_tokens, \
                     reserved_nanos, warned FROM budget_windows WHERE tenant = ",
                );
                q.push_bind(&h.tenant).push(" AND (");
                for (i, (kind, starts_at)) in h.windows.iter().enumerate() {
                    if i > 0 {
                        q.push(" OR ");
                    }
                    q.push("(window_kind = ")
                        .push_bind(kind)
                        .push(" AND starts_at = ")
                        .push_bind(starts_at)
                        .push(")");
                }
                q.push(")");
                if !h.windows.is_empty() {
                    totals = q
                        .build_query_as::<WindowSpend>()
                        .fetch_all(&mut *tx)
                        .await?;
                }
            }
            sqlx::query(
                "INSERT INTO llm_usage (tenant, at, run_id, model, agent, prompt_tokens, \
                 completion_tokens, cost_nanos, unpriced, cache_read_tokens, \
                 cache_write_tokens) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
            )
            .bind(&usage.tenant)
            .bind(micros)
            .bind(usage.run_id.to_string())
            .bind(&usage.model)
            .bind(&usage.agent)
            .bind(usage.prompt_tokens)
            .bind(usage.completion_tokens)
            .bind(usage.cost_nanos)
            .bind(i64::from(usage.unpriced))
            .bind(usage.cache_read_tokens)
            .bind(usage.cache_write_tokens)
            .execute(&mut *tx)
            .await?;
            tx.commit().await?;
            totals
        });
        Ok(totals)
    }

    /// Gives back every reservation `run_id` still holds (its calls were cut short, or its
    /// process died and the run is recovered). Returns how many were released.
    pub async fn release_budget_holds(&self, run_id: Uuid) -> Result<u64, StoreError> {
        let _turn = self.write_turn().await;
        let released = with_writer!(self, |pool| {
            let mut tx = pool.begin().await?;
            let holds: Vec<(String, String, i64, i64)> = sqlx::query_as(
                "DELETE FROM budget_holds WHERE run_id = $1 \
                 RETURNING tenant, windows, tokens, nanos",
            )
            .bind(run_id.to_string())
            .fetch_all(&mut *tx)
            .await?;
            for (tenant, windows, tokens, nanos) in &holds {
                for (kind, starts_at) in decode_windows(windows) {
                    sqlx::query(SETTLE_SQL)
                        .bind(0_i64)
                        .bind(0_i64)
                        .bind(tokens)
                        .bind(nanos)
                        .bind(tenant)
                        .bind(kind)
                        .bind(starts_at)
                        .execute(&mut *tx)
                        .await?;
                }
            }
            tx.commit().await?;
            holds.len() as u64
        });
        Ok(released)
    }

    /// Marks the window warned; true for the one caller that did (it logs the warning).
    pub async fn mark_budget_warned(
        &self,
        tenant: &str,
        kind: &str,
        starts_at: i64,
    ) -> Result<bool, StoreError> {
        let _turn = self.write_turn().await;
        let n = with_writer!(self, |pool| {
            sqlx::query(
                "UPDATE budget_windows SET warned = 1 \
                 WHERE tenant = $1 AND window_kind = $2 AND starts_at = $3 AND warned = 0",
            )
            .bind(tenant)
            .bind(kind)
            .bind(starts_at)
            .execute(pool)
            .await?
            .rows_affected()
        });
        Ok(n == 1)
    }

    /// How many tenants were warned in these windows (kind, starts_at).
    pub async fn tenants_warned(&self, windows: &[(&str, i64)]) -> Result<u64, StoreError> {
        let n: i64 = with_pool!(self, |pool| {
            let mut q = sqlx::QueryBuilder::new(
                "SELECT CAST(COUNT(DISTINCT tenant) AS BIGINT) FROM budget_windows \
                 WHERE warned = 1 AND (",
            );
            for (i, (kind, starts_at)) in windows.iter().enumerate() {
                if i > 0 {
                    q.push(" OR ");
                }
                q.push("(window_kind = ")
                    .push_bind(*kind)
                    .push(" AND starts_at = ")
                    .push_bind(*starts_at)
                    .push(")");
            }
            q.push(")");
            q.build_query_scalar().fetch_one(pool).await?
        });
        Ok(n.max(0).unsigned_abs())
    }

    /// Runs of `owner` going now, on every instance.
    pub async fn running_runs_of(&self, owner: &str) -> Result<u64, StoreError> {
        let n: i64 = with_pool!(self, |pool| {
            sqlx::query_scalar(
                "SELECT CAST(COUNT(*) AS BIGINT) FROM runs WHERE owner = $1 AND status = 'running'",
            )
            .bind(owner)
            .fetch_one(pool)
            .await?
        });
        Ok(n.max(0).unsigned_abs())
    }

    /// The tenant's totals in these windows (absent rows: nothing spent yet).
    pub async fn budget_spend(
        &self,
        tenant: &str,
        windows: &[(&str, i64)],
    ) -> Result<Vec<WindowSpend>, StoreError> {
        let mut out = Vec::with_capacity(windows.len());
        for (kind, starts_at) in windows {
            let row: Option<WindowSpend> = with_pool!(self, |pool| {
                sqlx::query_as(
                    "SELECT window_kind, starts_at, spent_tokens, spent_nanos, reserved_tokens, \
                     reserved_nanos, warned FROM budget_windows \
                     WHERE tenant = $1 AND window_kind = $2 AND starts_at = $3",
                )
                .bind(tenant)
                .bind(*kind)
                .bind(*starts_at)
                .fetch_optional(pool)
                .await?
            });
            out.push(row.unwrap_or(WindowSpend {
                window_kind: kind.to_string(),
                starts_at: *starts_at,
                spent_tokens: 0,
                spent_nanos: 0,
                reserved_tokens: 0,
                reserved_nanos: 0,
                warned: 0,
            }));
        }
        Ok(out)
    }
}

/// What `GET /api/usage` groups by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UsageGroup {
    /// UTC day; the key is the day's number since the Unix epoch.
    Day,
    Model,
    Agent,
    Tenant,
}

/// One group's sums.
#[derive(Clone, Debug, PartialEq, Eq, sqlx::FromRow)]
pub struct UsageRow {
    pub key: String,
    pub prompt_tokens: i64,
    pub completion_tokens: i64,
    pub cache_read_tokens: i64,
    pub cache_write_tokens: i64,
    pub llm_calls: i64,
    pub runs: i64,
    pub cost_nanos: i64,
    pub unpriced_calls: i64,
}

impl Store {
    /// Sums of the calls made in `[from, to)` (µs), of `tenant` (every tenant when `None`),
    /// per group, ordered by key.
    pub async fn usage(
        &self,
        tenant: Option<&str>,
        from: i64,
        to: i64,
        group: UsageGroup,
    ) -> Result<Vec<UsageRow>, StoreError> {
        let key = match group {
            UsageGroup::Day => "CAST(at / 86400000000 AS TEXT)",
            UsageGroup::Model => "model",
            UsageGroup::Agent => "agent",
            UsageGroup::Tenant => "tenant",
        };
        let sql = format!(
            "SELECT {key} AS key, CAST(SUM(prompt_tokens) AS BIGINT) AS prompt_tokens, \
             CAST(SUM(completion_tokens) AS BIGINT) AS completion_tokens, \
             CAST(SUM(cache_read_tokens) AS BIGINT) AS cache_read_tokens, \
             CAST(SUM(cache_write_tokens) AS BIGINT) AS cache_write_tokens, \
             CAST(COUNT(*) AS BIGINT) AS llm_calls, \
             CAST(COUNT(DISTINCT run_id) AS BIGINT) AS runs, \
             CAST(SUM(cost_nanos) AS BIGINT) AS cost_nanos, \
             CAST(SUM(unpriced) AS BIGINT) AS unpriced_calls \
             FROM llm_usage WHERE at >= $1 AND at < $2 AND ($3 IS NULL OR tenant = $3) \
             GROUP BY {key} ORDER BY 1"
        );
        let rows: Vec<UsageRow> = with_pool!(self, |pool| {
            sqlx::query_as(sqlx::AssertSqlSafe(sql.as_str()))
                .bind(from)
                .bind(to)
                .bind(tenant)
                .fetch_all(pool)
                .await?
        });
        Ok(rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hold_windows_read_back() {
        let w = vec![("day".to_string(), 5), ("month".to_string(), -7)];
        assert_eq!(decode_windows(&encode_windows(&w)), w);
    }
}
