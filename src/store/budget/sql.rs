//! The statements of a batch of bookings (`batch.rs`), each built for the batch's rows: one
//! statement per kind of row whatever the number of runs in the batch.

use sqlx::{Database, Encode, QueryBuilder, Type};

use super::windows::{encode_windows, WindowDelta, WindowKey};
use super::{Asked, Settlement};

pub(in crate::store) use super::windows::WindowRow;

/// A hold a booking deleted: settled, or released at its run's end.
#[derive(Debug, sqlx::FromRow)]
pub(in crate::store) struct Deleted {
    pub id: String,
    pub run_id: String,
    pub tenant: String,
    pub windows: String,
    pub tokens: i64,
    pub nanos: i64,
}

/// The usage ledger's columns, in the order [`Settlement`]s are bound.
const USAGE_INSERT: &str = "INSERT INTO llm_usage (tenant, at, run_id, model, agent, \
     prompt_tokens, completion_tokens, cost_nanos, unpriced, cache_read_tokens, \
     cache_write_tokens, estimated) ";

/// The usage records of `settle`, one row each.
pub(in crate::store) fn usage_insert<'a, DB>(settle: &'a [&'a Settlement]) -> QueryBuilder<DB>
where
    DB: Database,
    &'a String: Encode<'a, DB> + Type<DB>,
    String: Encode<'a, DB> + Type<DB>,
    i64: Encode<'a, DB> + Type<DB>,
{
    let mut q = QueryBuilder::new(USAGE_INSERT);
    q.push_values(settle, |mut row, s| {
        let u = &s.usage;
        row.push_bind(&u.tenant)
            .push_bind(s.at)
            .push_bind(u.run_id.to_string())
            .push_bind(&u.model)
            .push_bind(&u.agent)
            .push_bind(u.prompt_tokens)
            .push_bind(u.completion_tokens)
            .push_bind(u.cost_nanos)
            .push_bind(i64::from(u.unpriced))
            .push_bind(u.cache_read_tokens)
            .push_bind(u.cache_write_tokens)
            .push_bind(i64::from(u.estimated));
    });
    q
}

/// The holds of `asked`, taken at `micros`.
pub(in crate::store) fn hold_rows<'a, DB>(asked: &'a [&'a Asked], micros: i64) -> QueryBuilder<DB>
where
    DB: Database,
    &'a String: Encode<'a, DB> + Type<DB>,
    String: Encode<'a, DB> + Type<DB>,
    i64: Encode<'a, DB> + Type<DB>,
{
    let mut q = QueryBuilder::new(
        "INSERT INTO budget_holds (id, run_id, tenant, windows, tokens, nanos, created_at) ",
    );
    q.push_values(asked, |mut row, a| {
        let h = &a.hold;
        row.push_bind(h.id.to_string())
            .push_bind(a.run_id.to_string())
            .push_bind(&h.tenant)
            .push_bind(encode_windows(&h.windows))
            .push_bind(h.tokens)
            .push_bind(h.nanos)
            .push_bind(micros);
    });
    q
}

/// Deletes the holds `ids` and every hold of the runs `runs`, returning what was still there
/// (each hold is given back once, by whoever deletes it).
pub(in crate::store) fn holds_delete<'a, DB>(
    ids: &'a [String],
    runs: &'a [String],
) -> QueryBuilder<DB>
where
    DB: Database,
    &'a String: Encode<'a, DB> + Type<DB>,
{
    let mut q = QueryBuilder::new("DELETE FROM budget_holds WHERE ");
    for (i, (column, values)) in [("id", ids), ("run_id", runs)]
        .into_iter()
        .filter(|(_, v)| !v.is_empty())
        .enumerate()
    {
        if i > 0 {
            q.push(" OR ");
        }
        q.push(column).push(" IN (");
        let mut list = q.separated(", ");
        for v in values {
            list.push_bind(v);
        }
        q.push(")");
    }
    q.push(" RETURNING id, run_id, tenant, windows, tokens, nanos");
    q
}

/// Creates the window rows `keys` that do not exist yet, at zero.
pub(in crate::store) fn ensure_windows<'a, DB>(keys: &'a [WindowKey]) -> QueryBuilder<DB>
where
    DB: Database,
    &'a String: Encode<'a, DB> + Type<DB>,
    i64: Encode<'a, DB> + Type<DB>,
{
    let mut q = QueryBuilder::new("INSERT INTO budget_windows (tenant, window_kind, starts_at) ");
    q.push_values(keys, |mut row, (tenant, kind, starts_at)| {
        row.push_bind(tenant).push_bind(kind).push_bind(*starts_at);
    });
    q.push(" ON CONFLICT (tenant, window_kind, starts_at) DO NOTHING");
    q
}

/// The window rows `keys` (sorted), read with the backend's row `lock` in that order.
pub(in crate::store) fn windows_select<'a, DB>(
    keys: &'a [WindowKey],
    lock: &'static str,
) -> QueryBuilder<DB>
where
    DB: Database,
    &'a String: Encode<'a, DB> + Type<DB>,
    i64: Encode<'a, DB> + Type<DB>,
{
    let mut q = QueryBuilder::new(
        "SELECT tenant, window_kind, starts_at, spent_tokens, spent_nanos, reserved_tokens, \
         reserved_nanos, warned FROM budget_windows WHERE ",
    );
    for (i, (tenant, kind, starts_at)) in keys.iter().enumerate() {
        if i > 0 {
            q.push(" OR ");
        }
        q.push("(tenant = ")
            .push_bind(tenant)
            .push(" AND window_kind = ")
            .push_bind(kind)
            .push(" AND starts_at = ")
            .push_bind(*starts_at)
            .push(")");
    }
    q.push(" ORDER BY tenant, window_kind, starts_at")
        .push(lock);
    q
}

/// Adds each delta to its window row.
pub(in crate::store) fn windows_update<'a, DB>(deltas: &'a [WindowDelta]) -> QueryBuilder<DB>
where
    DB: Database,
    &'a String: Encode<'a, DB> + Type<DB>,
    i64: Encode<'a, DB> + Type<DB>,
{
    let mut q = QueryBuilder::new(
        "UPDATE budget_windows SET \
         spent_tokens = budget_windows.spent_tokens + v.column4, \
         spent_nanos = budget_windows.spent_nanos + v.column5, \
         reserved_tokens = budget_windows.reserved_tokens + v.column6, \
         reserved_nanos = budget_windows.reserved_nanos + v.column7 FROM (",
    );
    q.push_values(deltas, |mut row, ((tenant, kind, starts_at), d)| {
        row.push_bind(tenant)
            .push_bind(kind)
            .push_bind(*starts_at)
            .push_bind(d[0])
            .push_bind(d[1])
            .push_bind(d[2])
            .push_bind(d[3]);
    });
    q.push(
        ") AS v WHERE budget_windows.tenant = v.column1 \
         AND budget_windows.window_kind = v.column2 AND budget_windows.starts_at = v.column3",
    );
    q
}
