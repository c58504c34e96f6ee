//! A run's end closes its commands (sent through other instances, docs/deployment.md) in the
//! shared writer's transaction that stores its `done`, rather than in a commit of its own
//! before it: the run's row is locked first (with the lease fence, `FOR NO KEY UPDATE`), which
//! waits for the commands being sent (they hold it `FOR SHARE`); a statement after that sees
//! every command committed, and one sent later finds the run finished and is refused. An end
//! whose run has commands pending is held back ([`Written::Held`]): its run is marked
//! `closing` instead, and its owner does them before writing a `done` that tells of them.

use sqlx::{Database, Encode, QueryBuilder, Type};

use crate::store::{FinalState, RunBatch, Written};

/// In the transaction `$tx`, PostgreSQL (`$store.is_shared()`): of the ends that close their
/// commands, those with some pending are marked [`Written::Held`] in `$written` and their runs
/// `closing`. The rows must be locked already (`read_fence!`). `?` on a database error.
macro_rules! close_commands {
    ($store:expr, $tx:expr, $batches:expr, $ids:expr, $written:expr) => {{
        let asked = closing_ids($store.is_shared(), $batches, $ids, $written);
        if !asked.is_empty() {
            let cached = asked.len() <= $crate::store::binds::CACHED_ROWS;
            let mut q = pending_query(&asked);
            let pending: Vec<String> = q
                .build_query_scalar()
                .persistent(cached)
                .fetch_all(&mut *$tx)
                .await?;
            if !pending.is_empty() {
                // Rare (a command sent as the run ends): not kept prepared.
                let mut q = close_query(&pending);
                q.build().persistent(false).execute(&mut *$tx).await?;
                hold($ids, &pending, $written);
            }
        }
    }};
}
pub(super) use close_commands;

/// Whether the batch ends its run closing its commands (on a shared database only).
pub(super) fn asks_close(shared: bool, b: &RunBatch) -> bool {
    shared
        && b.finish
            .as_ref()
            .is_some_and(|f: &FinalState| f.close_commands)
}

/// The runs whose ends close their commands, among the batches not fenced.
pub(super) fn closing_ids<'a>(
    shared: bool,
    batches: &[RunBatch],
    ids: &'a [String],
    written: &[Written],
) -> Vec<&'a str> {
    batches
        .iter()
        .zip(ids)
        .zip(written)
        .filter(|((b, _), w)| **w != Written::Fenced && asks_close(shared, b))
        .map(|((_, id), _)| id.as_str())
        .collect()
}

/// Marks the batches of the runs `pending` held back.
pub(super) fn hold(ids: &[String], pending: &[String], written: &mut [Written]) {
    for (id, w) in ids.iter().zip(written.iter_mut()) {
        if *w != Written::Fenced && pending.contains(id) {
            *w = Written::Held;
        }
    }
}

/// `SELECT` the runs among `ids` with a command not done.
pub(super) fn pending_query<'a, DB>(ids: &[&'a str]) -> QueryBuilder<DB>
where
    DB: Database,
    &'a str: Encode<'a, DB> + Type<DB>,
{
    let mut q = QueryBuilder::new(
        "SELECT DISTINCT run_id FROM run_commands WHERE done_at IS NULL AND run_id IN (",
    );
    let mut list = q.separated(", ");
    for id in ids {
        list.push_bind(*id);
    }
    q.push(")");
    q
}

/// Marks the runs `ids` closing: a command sent from now on is refused.
pub(super) fn close_query<'a, DB>(ids: &'a [String]) -> QueryBuilder<DB>
where
    DB: Database,
    &'a str: Encode<'a, DB> + Type<DB>,
{
    let mut q = QueryBuilder::new("UPDATE runs SET closing = TRUE WHERE id IN (");
    let mut list = q.separated(", ");
    for id in ids {
        list.push_bind(id.as_str());
    }
    q.push(")");
    q
}
