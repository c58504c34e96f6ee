//! The reads of budgets and usage: a tenant's windows (admission, `GET /api/usage`, the
//! warning gauge), its runs going now, and the usage ledger's sums.

use super::WindowSpend;
use crate::store::{with_pool, Store, StoreError};

impl Store {
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
    pub estimated_calls: i64,
}

impl Store {
    /// `SUM(column)` kept at `i64::MAX` (each count already is, docs/api.md): SQLite's `SUM`
    /// fails on overflow and PostgreSQL's `BIGINT` cannot take a larger `NUMERIC` sum, so
    /// SQLite adds as floats (`TOTAL`, exact to 2^53) and PostgreSQL caps the exact sum.
    fn saturating_sum(&self, column: &str) -> String {
        match self.is_shared() {
            true => format!("CAST(LEAST(SUM({column}), 9223372036854775807) AS BIGINT)"),
            false => format!("CAST(MIN(TOTAL({column}), 9.2233720368547758e18) AS INTEGER)"),
        }
    }

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
        let sum = |column: &str| self.saturating_sum(column);
        let sql = format!(
            "SELECT {key} AS key, {} AS prompt_tokens, {} AS completion_tokens, \
             {} AS cache_read_tokens, {} AS cache_write_tokens, \
             CAST(COUNT(*) AS BIGINT) AS llm_calls, \
             CAST(COUNT(DISTINCT run_id) AS BIGINT) AS runs, \
             {} AS cost_nanos, {} AS unpriced_calls, {} AS estimated_calls \
             FROM llm_usage WHERE at >= $1 AND at < $2 AND ($3 IS NULL OR tenant = $3) \
             GROUP BY {key} ORDER BY 1",
            sum("prompt_tokens"),
            sum("completion_tokens"),
            sum("cache_read_tokens"),
            sum("cache_write_tokens"),
            sum("cost_nanos"),
            sum("unpriced"),
            sum("estimated"),
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
