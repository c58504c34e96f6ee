//! One binder for the store's inserts: a row is its values in column order ([`Arg`]), and
//! [`bind`] binds them on either backend, so the sqlx bounds are written once and each insert
//! only says which values go where (`message_row`, `conversation_row`, `run_row`).

/// A query of backend `DB` with its arguments.
pub(super) type Query<'q, DB> = sqlx::query::Query<'q, DB, <DB as sqlx::Database>::Arguments<'q>>;

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
