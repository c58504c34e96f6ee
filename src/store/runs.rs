//! Runs: created `running`, finished exactly once.
//!
//! "Exactly once" is a property of the SQL, not of the caller: `finish_run` only updates a row
//! that is still `running`, so a cancel racing a normal completion writes one terminal state and
//! the loser learns it lost (`false`). A partial unique index keeps at most one running run per
//! conversation, so `create_run` for a busy conversation fails with [`StoreError::Conflict`]
//! even across processes sharing a PostgreSQL database.
//!
//! Run starts (the group commit behind `create_run_with_query` and friends) are in
//! `runs/start.rs`.

use uuid::Uuid;

use super::binds::{bind, Arg};
use super::leases::LeaseHolder;
use super::models::{now, status, text, time, to_i64, to_u32, to_u64, uuid};
use super::{with_pool, with_writer, NewRun, RunFinish, RunRow, Store, StoreError};
use crate::domain::RunStatus;
use crate::llm::Usage;

mod start;
#[cfg(test)]
mod tests;

pub use start::RunStart;
pub(crate) use start::StartRow;

#[derive(sqlx::FromRow)]
struct RunRecord {
    id: String,
    conversation_id: String,
    owner: String,
    status: String,
    mode: String,
    model: String,
    iterations: i64,
    tool_calls: i64,
    prompt_tokens: i64,
    completion_tokens: i64,
    total_tokens: i64,
    llm_calls: i64,
    cache_read_tokens: i64,
    cache_write_tokens: i64,
    cost_nanos: i64,
    unpriced_calls: i64,
    estimated_calls: i64,
    started_at: i64,
    finished_at: Option<i64>,
    error: Option<String>,
}

impl RunRecord {
    fn into_model(self) -> Result<RunRow, StoreError> {
        Ok(RunRow {
            id: uuid(&self.id)?,
            conversation_id: uuid(&self.conversation_id)?,
            owner: self.owner,
            status: status(&self.status)?,
            mode: text(&self.mode)?,
            model: self.model,
            iterations: to_u32(self.iterations),
            tool_calls: to_u32(self.tool_calls),
            usage: Usage {
                prompt_tokens: to_u64(self.prompt_tokens),
                completion_tokens: to_u64(self.completion_tokens),
                total_tokens: to_u64(self.total_tokens),
                llm_calls: to_u64(self.llm_calls),
                cache_read_tokens: to_u64(self.cache_read_tokens),
                cache_write_tokens: to_u64(self.cache_write_tokens),
                cost_usd: crate::domain::Cost::from_nanos(to_u64(self.cost_nanos)),
                unpriced_calls: to_u64(self.unpriced_calls),
                estimated_calls: to_u64(self.estimated_calls),
            },
            started_at: time(self.started_at)?,
            finished_at: self.finished_at.map(time).transpose()?,
            error: self.error,
        })
    }
}

macro_rules! select_runs {
    ($rest:literal) => {
        concat!(
            "SELECT id, conversation_id, owner, status, mode, model, iterations, tool_calls, ",
            "prompt_tokens, completion_tokens, total_tokens, llm_calls, cache_read_tokens, ",
            "cache_write_tokens, cost_nanos, unpriced_calls, estimated_calls, started_at, ",
            "finished_at, error FROM runs ",
            $rest
        )
    };
}

/// The terminal-state update: only a row still `running` changes, which is what makes the
/// terminal state written exactly once; the checkpoint, only needed to resume, goes — unless
/// the run waits for its caller's tools (`requires_action`): its continuation starts from it.
/// Binds: status, iterations, tool_calls, the six usage counters, error, finished_at, id,
/// cost_nanos, unpriced_calls, estimated_calls.
const FINISH_RUN_SQL: &str = "UPDATE runs SET status = $1, iterations = $2, tool_calls = $3, \
     prompt_tokens = $4, completion_tokens = $5, total_tokens = $6, llm_calls = $7, \
     cache_read_tokens = $8, cache_write_tokens = $9, \
     error = $10, finished_at = $11, checkpoint = CASE WHEN $1 = 'requires_action' \
     THEN checkpoint END, cost_nanos = $13, unpriced_calls = $14, estimated_calls = $15 \
     WHERE id = $12 AND status = 'running'";

/// The terminal states of several runs in one statement: this, then `micros` (bound), then
/// ` FROM (VALUES (id, status, iterations, tool_calls, prompt_tokens, completion_tokens,
/// total_tokens, llm_calls, cache_read_tokens, cache_write_tokens, error, cost_nanos,
/// unpriced_calls, estimated_calls), …) AS v WHERE runs.id = v.column1 AND runs.status = 'running' RETURNING id`
/// (both backends name a VALUES list's columns `column1`, …).
pub(super) const FINISH_RUNS_SQL: &str =
    "UPDATE runs SET status = v.column2, iterations = v.column3, tool_calls = v.column4, \
     prompt_tokens = v.column5, completion_tokens = v.column6, total_tokens = v.column7, \
     llm_calls = v.column8, cache_read_tokens = v.column9, cache_write_tokens = v.column10, \
     error = v.column11, cost_nanos = v.column12, unpriced_calls = v.column13, \
     estimated_calls = v.column14, \
     checkpoint = CASE WHEN v.column2 = 'requires_action' THEN runs.checkpoint END, \
     finished_at = ";

fn into_models(records: Vec<RunRecord>) -> Result<Vec<RunRow>, StoreError> {
    records.into_iter().map(RunRecord::into_model).collect()
}

/// Inserts a `running` run with its first block of event ids reserved, leased (epoch 1) to
/// the store's lease holder until `started_at + ttl` (both NULL without one). Binds: id,
/// conversation_id, owner, mode, model, started_at, event_ceiling, lease_owner, lease_until,
/// traceparent (see
/// [`run_row`]). `started_at` is the local clock: the lease is renewed by the database's clock
/// within `lease_renew_s`, long before a clock skew could matter.
const INSERT_RUN_SQL: &str =
    "INSERT INTO runs (id, conversation_id, owner, status, mode, model, started_at, \
     event_ceiling, lease_owner, lease_epoch, lease_until, traceparent) \
     VALUES ($1, $2, $3, 'running', $4, $5, $6, $7, $8, 1, $9, $10)";

/// [`INSERT_RUN_SQL`] with the run's first checkpoint as `$11`.
const INSERT_RUN_FROM_SQL: &str =
    "INSERT INTO runs (id, conversation_id, owner, status, mode, model, started_at, \
     event_ceiling, lease_owner, lease_epoch, lease_until, traceparent, checkpoint) \
     VALUES ($1, $2, $3, 'running', $4, $5, $6, $7, $8, 1, $9, $10, $11)";

/// Raises a run's event-id ceiling, never lowering it. Binds: ceiling, id.
pub(super) const RAISE_CEILING_SQL: &str =
    "UPDATE runs SET event_ceiling = $1 WHERE id = $2 AND event_ceiling < $1";

/// The values of [`INSERT_RUN_SQL`] for `r`, started at `micros`, leased to `holder`.
fn run_row<'a>(r: &'a NewRun, micros: i64, holder: Option<&'a LeaseHolder>) -> Vec<Arg<'a>> {
    vec![
        Arg::String(r.id.to_string()),
        Arg::String(r.conversation_id.to_string()),
        Arg::Str(r.owner.as_str()),
        Arg::Str(r.mode.as_str()),
        Arg::Str(r.model.as_str()),
        Arg::Int(micros),
        Arg::Int(super::EVENT_ID_BLOCK),
        holder.map_or(Arg::OptStr(None), |h| {
            Arg::OptStr(Some(h.instance.as_str()))
        }),
        holder.map_or(Arg::OptInt(None), |h| {
            Arg::OptInt(Some(micros + h.ttl_micros()))
        }),
        Arg::OptStr(r.traceparent.as_deref()),
    ]
}

impl Store {
    /// The run's stored `traceparent` (tracing was on when it started), for its resumption.
    pub async fn run_traceparent(&self, run_id: Uuid) -> Result<Option<String>, StoreError> {
        let tp: Option<Option<String>> = with_pool!(self, |pool| {
            sqlx::query_scalar("SELECT traceparent FROM runs WHERE id = $1")
                .bind(run_id.to_string())
                .fetch_optional(pool)
                .await?
        });
        Ok(tp.flatten())
    }

    /// The highest event id the run may have sent to clients (`runs.event_ceiling`), 0 when
    /// unknown: recovery numbers its tail above it and above every stored event.
    pub async fn event_ceiling(&self, run_id: Uuid) -> Result<i64, StoreError> {
        let ceiling: Option<i64> = with_pool!(self, |pool| {
            sqlx::query_scalar("SELECT event_ceiling FROM runs WHERE id = $1")
                .bind(run_id.to_string())
                .fetch_optional(pool)
                .await?
        });
        Ok(ceiling.unwrap_or(0))
    }

    /// Raises the run's event-id ceiling to `ceiling` (never lowers it), committed on return.
    pub async fn raise_event_ceiling(&self, run_id: Uuid, ceiling: i64) -> Result<(), StoreError> {
        let _turn = self.write_turn().await;
        with_writer!(self, |pool| {
            sqlx::query(RAISE_CEILING_SQL)
                .bind(ceiling)
                .bind(run_id.to_string())
                .execute(pool)
                .await?;
        });
        Ok(())
    }

    /// The run's last checkpoint (JSON), if it has one.
    pub async fn run_checkpoint(&self, run_id: Uuid) -> Result<Option<String>, StoreError> {
        let checkpoint: Option<Option<String>> = with_pool!(self, |pool| {
            sqlx::query_scalar("SELECT checkpoint FROM runs WHERE id = $1")
                .bind(run_id.to_string())
                .fetch_optional(pool)
                .await?
        });
        Ok(checkpoint.flatten())
    }

    /// Records a new run as `running`, started now. Fails with [`StoreError::Conflict`] when
    /// the conversation already has a running run.
    pub async fn create_run(&self, new: NewRun) -> Result<(), StoreError> {
        let _turn = self.write_turn().await;
        let (_, micros) = now();
        with_writer!(self, |pool| {
            bind(
                sqlx::query(INSERT_RUN_SQL),
                run_row(&new, micros, self.lease_holder()),
            )
            .execute(pool)
            .await?;
        });
        Ok(())
    }

    /// As [`Store::create_run`], the run stored with the checkpoint it starts from (a
    /// continuation's: the caller's outputs appended), so that once this returns a crash
    /// cannot lose what the run was started with: recovery resumes it from there. `record`: a
    /// facade's record of the request ([`RunStart::record`](start::RunStart)), in the same
    /// transaction. Returns the run's `started_at` (µs).
    pub async fn create_run_from(
        &self,
        new: NewRun,
        checkpoint: &str,
        record: Option<&str>,
    ) -> Result<i64, StoreError> {
        let _turn = self.write_turn().await;
        let (_, micros) = now();
        with_writer!(self, |pool| {
            let mut tx = pool.begin().await?;
            let mut row = run_row(&new, micros, self.lease_holder());
            row.push(Arg::Str(checkpoint));
            bind(sqlx::query(INSERT_RUN_FROM_SQL), row)
                .execute(&mut *tx)
                .await?;
            if let Some(record) = record {
                sqlx::query(start::INSERT_RECORD_SQL)
                    .bind(new.id.to_string())
                    .bind(record)
                    .execute(&mut *tx)
                    .await?;
            }
            tx.commit().await?;
        });
        Ok(micros)
    }

    /// Writes the terminal state and `finished_at`, only if the run is still running. `false`
    /// when it was already finished, does not exist, or `finish.status` is `Running` (not a
    /// terminal state).
    pub async fn finish_run(&self, id: Uuid, finish: RunFinish) -> Result<bool, StoreError> {
        let _turn = self.write_turn().await;
        if finish.status == RunStatus::Running {
            return Ok(false);
        }
        let (_, micros) = now();
        let usage = finish.usage;
        let updated = with_writer!(self, |pool| {
            sqlx::query(FINISH_RUN_SQL)
                .bind(finish.status.as_str())
                .bind(i64::from(finish.iterations))
                .bind(i64::from(finish.tool_calls))
                .bind(to_i64(usage.prompt_tokens))
                .bind(to_i64(usage.completion_tokens))
                .bind(to_i64(usage.total_tokens))
                .bind(to_i64(usage.llm_calls))
                .bind(to_i64(usage.cache_read_tokens))
                .bind(to_i64(usage.cache_write_tokens))
                .bind(finish.error.as_deref().map(super::storable))
                .bind(micros)
                .bind(id.to_string())
                .bind(to_i64(usage.cost_usd.nanos()))
                .bind(to_i64(usage.unpriced_calls))
                .bind(to_i64(usage.estimated_calls))
                .execute(pool)
                .await?
                .rows_affected()
        });
        Ok(updated == 1)
    }

    /// A run of `owner`; `None` when missing or someone else's.
    pub async fn get_run(&self, owner: &str, id: Uuid) -> Result<Option<RunRow>, StoreError> {
        let record: Option<RunRecord> = with_pool!(self, |pool| {
            sqlx::query_as(select_runs!("WHERE id = $1 AND owner = $2"))
                .bind(id.to_string())
                .bind(owner)
                .fetch_optional(pool)
                .await?
        });
        record.map(RunRecord::into_model).transpose()
    }

    /// A run whoever owns it: for the run manager, never for a client-supplied id.
    pub async fn get_run_any(&self, id: Uuid) -> Result<Option<RunRow>, StoreError> {
        let record: Option<RunRecord> = with_pool!(self, |pool| {
            sqlx::query_as(select_runs!("WHERE id = $1"))
                .bind(id.to_string())
                .fetch_optional(pool)
                .await?
        });
        record.map(RunRecord::into_model).transpose()
    }

    /// Every run still marked running, oldest first: at start-up these are runs a previous
    /// process did not finish.
    pub async fn running_runs(&self) -> Result<Vec<RunRow>, StoreError> {
        let records: Vec<RunRecord> = with_pool!(self, |pool| {
            sqlx::query_as(select_runs!(
                "WHERE status = 'running' ORDER BY started_at, id"
            ))
            .fetch_all(pool)
            .await?
        });
        into_models(records)
    }

    /// The running run of a conversation, if any.
    pub async fn active_run_for(&self, conversation_id: Uuid) -> Result<Option<Uuid>, StoreError> {
        let id: Option<String> = with_pool!(self, |pool| {
            sqlx::query_scalar(
                "SELECT id FROM runs WHERE conversation_id = $1 AND status = 'running' LIMIT 1",
            )
            .bind(conversation_id.to_string())
            .fetch_optional(pool)
            .await?
        });
        id.as_deref().map(uuid).transpose()
    }

    /// The conversation's latest run (the one started last), if it has any.
    pub async fn latest_run(&self, conversation_id: Uuid) -> Result<Option<RunRow>, StoreError> {
        let record: Option<RunRecord> = with_pool!(self, |pool| {
            sqlx::query_as(select_runs!(
                "WHERE conversation_id = $1 ORDER BY started_at DESC, id DESC LIMIT 1"
            ))
            .bind(conversation_id.to_string())
            .fetch_optional(pool)
            .await?
        });
        record.map(RunRecord::into_model).transpose()
    }

    /// The runs of a conversation, oldest first (for history views and tests).
    pub async fn list_runs(&self, conversation_id: Uuid) -> Result<Vec<RunRow>, StoreError> {
        let records: Vec<RunRecord> = with_pool!(self, |pool| {
            sqlx::query_as(select_runs!(
                "WHERE conversation_id = $1 ORDER BY started_at, id"
            ))
            .bind(conversation_id.to_string())
            .fetch_all(pool)
            .await?
        });
        into_models(records)
    }
}
