//! One binder for the store's inserts: a row is its values in column order ([`Arg`]), and
//! [`bind`] binds them on either backend, so the sqlx bounds are written once and each insert
//! only says which values go where (`message_row`, `conversation_row`, `run_row`).

/// A query of backend `DB` with its arguments.
pub(super) type Query<'q, DB> = sqlx::query::Query<'q, DB, <DB as sqlx::Database>::Arguments>;

/// One value of an insert.
pub(super) enum Arg<'q> {
    Str(&'q str),
    String(String),
    OptStr(Option<&'q str>),
    OptString(Option<String>),
    Int(i64),
    OptInt(Option<i64>),
}

/// Binds `args` in order.
pub(super) fn bind<'q, DB>(q: Query<'q, DB>, args: Vec<Arg<'q>>) -> Query<'q, DB>
where
    DB: sqlx::Database,
    String: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    &'q str: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    Option<&'q str>: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    Option<String>: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    i64: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    Option<i64>: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
{
    args.into_iter().fold(q, |q, arg| match arg {
        Arg::Str(v) => q.bind(v),
        Arg::String(v) => q.bind(v),
        Arg::OptStr(v) => q.bind(v),
        Arg::OptString(v) => q.bind(v),
        Arg::Int(v) => q.bind(v),
        Arg::OptInt(v) => q.bind(v),
    })
}

/// Most rows in one statement built by [`many_rows`] (at ≤ 10 binds a row, far below
/// SQLite's 32 766 and PostgreSQL's 65 535 bind limits).
pub(super) const MANY_ROWS: usize = 500;

/// Statements of at most this many rows keep their prepared form in the connection's cache
/// (sqlx's holds 100): the few common batch sizes, not one entry per size seen.
pub(super) const CACHED_ROWS: usize = 8;

/// `sql`, an `INSERT … VALUES (…)` of one row binding `$1..$per_row` once each, in order, as
/// one statement of `rows` rows: bind the rows' values one row after the other. PostgreSQL
/// gets the binds renumbered (`$1..`); SQLite (`numbered` false) plain `?`, since naming them
/// makes its parser look every name up among those before (quadratic in the binds). One
/// statement instead of one per row saves a round trip to SQLite's worker thread per row
/// (BENCHMARKS.md).
pub(super) fn many_rows(sql: &str, per_row: usize, rows: usize, numbered: bool) -> String {
    let Some(at) = sql.find(" VALUES ") else {
        return sql.to_string();
    };
    let (head, tuple) = (&sql[..at + 8], &sql[at + 8..]);
    let mut out = String::with_capacity(head.len() + rows * (tuple.len() + 8));
    out.push_str(head);
    for r in 0..rows {
        if r > 0 {
            out.push_str(", ");
        }
        let mut rest = tuple;
        while let Some(i) = rest.find('$') {
            out.push_str(&rest[..i]);
            rest = &rest[i + 1..];
            let digits = rest
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(rest.len());
            if numbered {
                let n: usize = rest[..digits].parse().unwrap_or(0);
                out.push('$');
                out.push_str(&(n + r * per_row).to_string());
            } else {
                out.push('?');
            }
            rest = &rest[digits..];
        }
        out.push_str(rest);
    }
    out
}

/// Inserts `rows` (each the [`Arg`]s of the one-row `$sql`, in order) in the transaction
/// `$tx`, [`MANY_ROWS`] rows per statement; `?` on a database error. A macro, not a function:
/// `$tx` is either backend's transaction.
///
/// The binds are renumbered by the rows' own width, not by a count kept beside the SQL: one
/// that fell behind a new column made every multi-row start on PostgreSQL fail and be
/// retried a row at a time, while SQLite's `?` hid it.
macro_rules! insert_many {
    ($tx:expr, $sql:expr, $rows:expr, $numbered:expr) => {{
        let mut rows = $rows.into_iter().peekable();
        while rows.peek().is_some() {
            let chunk: Vec<Vec<$crate::store::binds::Arg<'_>>> = rows
                .by_ref()
                .take($crate::store::binds::MANY_ROWS)
                .collect();
            // Prepared statements are cached for the few common batch sizes only.
            let cached = chunk.len() <= $crate::store::binds::CACHED_ROWS;
            let per_row = chunk.first().map_or(0, Vec::len);
            let sql = $crate::store::binds::many_rows($sql, per_row, chunk.len(), $numbered);
            let args = chunk.into_iter().flatten().collect();
            $crate::store::binds::bind(
                sqlx::query(sqlx::AssertSqlSafe(sql.as_str())).persistent(cached),
                args,
            )
            .execute(&mut *$tx)
            .await?;
        }
    }};
}
pub(crate) use insert_many;

/// Sets `updated_at` to `$micros` on the conversations `$ids` (`&[String]`) in the
/// transaction `$tx`, [`MANY_ROWS`] per statement; `?` on a database error.
macro_rules! touch_conversations {
    ($tx:expr, $ids:expr, $micros:expr) => {{
        for chunk in $ids.chunks($crate::store::binds::MANY_ROWS) {
            let mut q = sqlx::QueryBuilder::new("UPDATE conversations SET updated_at = ");
            q.push_bind($micros).push(" WHERE id IN (");
            let mut list = q.separated(", ");
            for id in chunk {
                list.push_bind(id.as_str());
            }
            q.push(")");
            let cached = chunk.len() <= $crate::store::binds::CACHED_ROWS;
            q.build().persistent(cached).execute(&mut *$tx).await?;
        }
    }};
}
pub(crate) use touch_conversations;

#[cfg(test)]
mod tests {
    use super::many_rows;

    #[test]
    fn rows_are_renumbered_in_order() {
        let sql = "INSERT INTO t (a, b, c) VALUES ($1, 'x', $2 + 1)";
        assert_eq!(many_rows(sql, 2, 1, true), sql);
        assert_eq!(
            many_rows(sql, 2, 3, true),
            "INSERT INTO t (a, b, c) VALUES ($1, 'x', $2 + 1), ($3, 'x', $4 + 1), \
             ($5, 'x', $6 + 1)"
        );
        assert_eq!(
            many_rows(sql, 2, 2, false),
            "INSERT INTO t (a, b, c) VALUES (?, 'x', ? + 1), (?, 'x', ? + 1)"
        );
    }
}
