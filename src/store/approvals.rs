//! Pending approvals as rows (docs/api.md, docs/deployment.md), so any instance lists and decides them: the
//! run's owner writes one when its hook asks, and each is decided exactly once, by whichever
//! `UPDATE … WHERE decision IS NULL` comes first — a reviewer's on any instance, or the
//! owner's timeout.

use uuid::Uuid;

use super::models::{now, uuid};
use super::notify::COMMANDS_CHANNEL;
use super::{with_pool, with_writer, Store, StoreError};

/// How a decision attempt went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RowDecision {
    /// This call decided it.
    Decided,
    /// Decided before (the decision that stands, and its reason).
    Taken(String, Option<String>),
    /// No such row (or another tenant's).
    Missing,
}

/// A pending approval row: its id, run and the request as JSON.
#[derive(Clone, Debug, PartialEq, Eq, sqlx::FromRow)]
pub struct ApprovalRecord {
    pub id: String,
    pub run_id: String,
    pub info: String,
}

impl Store {
    /// Records a pending request of `run_id` (its owner's tenant taken from the run).
    pub async fn insert_approval(
        &self,
        id: Uuid,
        run_id: Uuid,
        info: &str,
    ) -> Result<(), StoreError> {
        let _turn = self.write_turn().await;
        let (_, micros) = now();
        with_writer!(self, |pool| {
            sqlx::query(
                "INSERT INTO approvals (id, run_id, owner, info, requested_at) \
                 SELECT $1, id, owner, $2, $3 FROM runs WHERE id = $4",
            )
            .bind(id.to_string())
            .bind(info)
            .bind(micros)
            .bind(run_id.to_string())
            .execute(pool)
            .await?;
        });
        Ok(())
    }

    /// Decides the approval (`owner`'s only, when given) unless it already is; a reviewer's
    /// decision wakes the run's owner.
    pub async fn decide_approval(
        &self,
        id: Uuid,
        owner: Option<&str>,
        decision: &str,
        reason: Option<&str>,
    ) -> Result<RowDecision, StoreError> {
        let run: Option<String> = {
            let _turn = self.write_turn().await;
            let (_, micros) = now();
            with_writer!(self, |pool| {
                sqlx::query_scalar(
                    "UPDATE approvals SET decision = $1, reason = $2, decided_at = $3 \
                     WHERE id = $4 AND decision IS NULL AND ($5 IS NULL OR owner = $5) \
                     RETURNING run_id",
                )
                .bind(decision)
                .bind(reason)
                .bind(micros)
                .bind(id.to_string())
                .bind(owner)
                .fetch_optional(pool)
                .await?
            })
        };
        if let Some(run) = run {
            if owner.is_some() {
                self.notify(COMMANDS_CHANNEL, &run).await?;
            }
            return Ok(RowDecision::Decided);
        }
        let row: Option<(Option<String>, Option<String>)> = with_pool!(self, |pool| {
            sqlx::query_as(
                "SELECT decision, reason FROM approvals \
                 WHERE id = $1 AND ($2 IS NULL OR owner = $2)",
            )
            .bind(id.to_string())
            .bind(owner)
            .fetch_optional(pool)
            .await?
        });
        Ok(match row {
            Some((Some(d), reason)) => RowDecision::Taken(d, reason),
            _ => RowDecision::Missing,
        })
    }

    /// The decision of an approval, if decided.
    pub async fn approval_decision(
        &self,
        id: Uuid,
    ) -> Result<Option<(String, Option<String>)>, StoreError> {
        let row: Option<(Option<String>, Option<String>)> = with_pool!(self, |pool| {
            sqlx::query_as("SELECT decision, reason FROM approvals WHERE id = $1")
                .bind(id.to_string())
                .fetch_optional(pool)
                .await?
        });
        Ok(row.and_then(|(d, r)| d.map(|d| (d, r))))
    }

    /// The ids of the run's undecided requests.
    pub async fn undecided_approvals(&self, run_id: Uuid) -> Result<Vec<Uuid>, StoreError> {
        let ids: Vec<String> = with_pool!(self, |pool| {
            sqlx::query_scalar("SELECT id FROM approvals WHERE run_id = $1 AND decision IS NULL")
                .bind(run_id.to_string())
                .fetch_all(pool)
                .await?
        });
        ids.iter().map(|id| uuid(id)).collect()
    }

    /// `owner`'s undecided approvals of running runs, oldest first.
    pub async fn pending_approvals(&self, owner: &str) -> Result<Vec<ApprovalRecord>, StoreError> {
        let rows: Vec<ApprovalRecord> = with_pool!(self, |pool| {
            sqlx::query_as(
                "SELECT a.id, a.run_id, a.info FROM approvals a JOIN runs r ON r.id = a.run_id \
                 WHERE a.owner = $1 AND a.decision IS NULL AND r.status = 'running' \
                 ORDER BY a.requested_at, a.id",
            )
            .bind(owner)
            .fetch_all(pool)
            .await?
        });
        Ok(rows)
    }
}

/// The run id of a record.
impl ApprovalRecord {
    pub fn run(&self) -> Result<Uuid, StoreError> {
        uuid(&self.run_id)
    }
}
