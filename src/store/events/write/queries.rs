//! The statements of the shared writer's transaction built for a batch of runs (`write.rs`).

use sqlx::{Database, Encode, QueryBuilder, Type};

use crate::store::models::to_i64;
use crate::store::runs::FINISH_RUNS_SQL;
use crate::store::FinalState;

/// `SELECT id, lease_epoch` of the runs `ids`, ordered, with the backend's row `lock`.
pub(super) fn epochs_query<'a, DB>(ids: &[&'a str], lock: &'static str) -> QueryBuilder<DB>
where
    DB: Database,
    &'a str: Encode<'a, DB> + Type<DB>,
{
    let mut q = QueryBuilder::new("SELECT id, lease_epoch FROM runs WHERE id IN (");
    let mut list = q.separated(", ");
    for id in ids {
        list.push_bind(*id);
    }
    q.push(") ORDER BY id").push(lock);
    q
}

/// Stores `(run id, checkpoint)` pairs on the runs still `running`.
pub(super) fn checkpoints_query<'a, DB>(rows: &[(&'a str, &'a str)]) -> QueryBuilder<DB>
where
    DB: Database,
    &'a str: Encode<'a, DB> + Type<DB>,
{
    let mut q = QueryBuilder::new("UPDATE runs SET checkpoint = v.column2 FROM (");
    q.push_values(rows, |mut row, (id, checkpoint)| {
        row.push_bind(*id).push_bind(*checkpoint);
    });
    q.push(") AS v WHERE runs.id = v.column1 AND runs.status = 'running'");
    q
}

/// Writes the terminal states of `rows` on the runs still `running`, returning their ids.
pub(super) fn finish_query<'a, DB>(
    rows: &[(usize, &'a str, &'a FinalState)],
    micros: i64,
) -> QueryBuilder<DB>
where
    DB: Database,
    &'a str: Encode<'a, DB> + Type<DB>,
    i64: Encode<'a, DB> + Type<DB>,
    Option<std::borrow::Cow<'a, str>>: Encode<'a, DB> + Type<DB>,
{
    let mut q = QueryBuilder::new(FINISH_RUNS_SQL);
    q.push_bind(micros).push(" FROM (");
    q.push_values(rows, |mut row, (_, id, fin)| {
        let f = &fin.finish;
        row.push_bind(*id)
            .push_bind(f.status.as_str())
            .push_bind(i64::from(f.iterations))
            .push_bind(i64::from(f.tool_calls))
            .push_bind(to_i64(f.usage.prompt_tokens))
            .push_bind(to_i64(f.usage.completion_tokens))
            .push_bind(to_i64(f.usage.total_tokens))
            .push_bind(to_i64(f.usage.llm_calls))
            .push_bind(to_i64(f.usage.cache_read_tokens))
            .push_bind(to_i64(f.usage.cache_write_tokens))
            .push_bind(f.error.as_deref().map(crate::store::storable))
            .push_bind(to_i64(f.usage.cost_usd.nanos()))
            .push_bind(to_i64(f.usage.unpriced_calls))
            .push_bind(to_i64(f.usage.estimated_calls));
    });
    q.push(") AS v WHERE runs.id = v.column1 AND runs.status = 'running' RETURNING id");
    q
}
