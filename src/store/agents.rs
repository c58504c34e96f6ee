//! Agents managed at run time (docs/api.md "Agents"): one `agents` row per (owner, name) and its
//! immutable `agent_versions`. The spec is JSON the catalog wrote and reads back; the store
//! does not look inside it.
//!
//! A delete only marks the row: the versions stay, so conversations pinned to one keep
//! running, and a later create of the same name continues the version numbers.

use chrono::{DateTime, Utc};

use super::models::{now, time};
use super::{with_pool, with_writer, Store, StoreError};

/// One version of an agent.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredAgent {
    pub name: String,
    pub version: u32,
    /// The agent's fields as JSON.
    pub spec: String,
    /// When this version was written.
    pub created_at: DateTime<Utc>,
}

type Row = (String, i64, String, i64);

fn agent_of((name, version, spec, created_at): Row) -> Result<StoredAgent, StoreError> {
    Ok(StoredAgent {
        name,
        version: u32::try_from(version)
            .map_err(|_| StoreError::Corrupt(format!("agent version {version}")))?,
        spec,
        created_at: time(created_at)?,
    })
}

/// `SELECT <version columns> FROM agent_versions v JOIN agents a <rest>`.
macro_rules! select_versions {
    ($rest:literal) => {
        concat!(
            "SELECT v.name, v.version, v.spec, v.created_at FROM agent_versions v ",
            "JOIN agents a ON a.owner = v.owner AND a.name = v.name ",
            $rest
        )
    };
}

/// Makes a live agent (new, or a deleted one revived) with its next version. Binds: owner,
/// name, now.
const CREATE_SQL: &str = "INSERT INTO agents (owner, name, latest_version, deleted, created_at, \
     updated_at) VALUES ($1, $2, 1, 0, $3, $3) ON CONFLICT (owner, name) DO UPDATE SET \
     latest_version = agents.latest_version + 1, deleted = 0, updated_at = $3 \
     WHERE agents.deleted = 1 RETURNING latest_version";

/// Moves a live agent to its next version. Binds: owner, name, now.
const BUMP_SQL: &str = "UPDATE agents SET latest_version = latest_version + 1, updated_at = $3 \
     WHERE owner = $1 AND name = $2 AND deleted = 0 RETURNING latest_version";

impl Store {
    /// Stores `owner`'s new agent `name` with `spec` as its first version (or, for a deleted
    /// agent of that name, as its next one); `None` when a live agent of that name exists.
    pub async fn create_agent(
        &self,
        owner: &str,
        name: &str,
        spec: &str,
    ) -> Result<Option<u32>, StoreError> {
        self.write_version(CREATE_SQL, owner, name, spec).await
    }

    /// Stores `spec` as the next version of `owner`'s live agent `name`; `None` when there is
    /// none.
    pub async fn update_agent(
        &self,
        owner: &str,
        name: &str,
        spec: &str,
    ) -> Result<Option<u32>, StoreError> {
        self.write_version(BUMP_SQL, owner, name, spec).await
    }

    /// Runs `head` (which returns the new version number, or no row) and inserts the version
    /// in the same transaction.
    async fn write_version(
        &self,
        head: &'static str,
        owner: &str,
        name: &str,
        spec: &str,
    ) -> Result<Option<u32>, StoreError> {
        let (_, micros) = now();
        let _turn = self.write_turn().await;
        let version = with_writer!(self, |pool| {
            let mut tx = pool.begin().await?;
            let version: Option<i64> = sqlx::query_scalar(head)
                .bind(owner)
                .bind(name)
                .bind(micros)
                .fetch_optional(&mut *tx)
                .await?;
            if let Some(v) = version {
                sqlx::query(
                    "INSERT INTO agent_versions (owner, name, version, spec, created_at) \
                     VALUES ($1, $2, $3, $4, $5)",
                )
                .bind(owner)
                .bind(name)
                .bind(v)
                .bind(spec)
                .bind(micros)
                .execute(&mut *tx)
                .await?;
            }
            tx.commit().await?;
            version
        });
        version
            .map(|v| u32::try_from(v).map_err(|_| StoreError::Corrupt(format!("version {v}"))))
            .transpose()
    }

    /// Marks `owner`'s live agent `name` deleted; `false` when there is none.
    pub async fn delete_agent(&self, owner: &str, name: &str) -> Result<bool, StoreError> {
        let (_, micros) = now();
        let _turn = self.write_turn().await;
        let changed = with_writer!(self, |pool| {
            sqlx::query(
                "UPDATE agents SET deleted = 1, updated_at = $3 \
                 WHERE owner = $1 AND name = $2 AND deleted = 0",
            )
            .bind(owner)
            .bind(name)
            .bind(micros)
            .execute(pool)
            .await?
            .rows_affected()
        });
        Ok(changed > 0)
    }

    /// The latest version of `owner`'s live agent `name`.
    pub async fn agent(&self, owner: &str, name: &str) -> Result<Option<StoredAgent>, StoreError> {
        let row: Option<Row> = with_pool!(self, |pool| {
            sqlx::query_as(select_versions!(
                "WHERE a.owner = $1 AND a.name = $2 AND a.deleted = 0 \
                 AND v.version = a.latest_version"
            ))
            .bind(owner)
            .bind(name)
            .fetch_optional(pool)
            .await?
        });
        row.map(agent_of).transpose()
    }

    /// Version `version` of `owner`'s agent `name`, deleted or not (its conversations run on).
    pub async fn agent_version(
        &self,
        owner: &str,
        name: &str,
        version: u32,
    ) -> Result<Option<StoredAgent>, StoreError> {
        let row: Option<Row> = with_pool!(self, |pool| {
            sqlx::query_as(select_versions!(
                "WHERE a.owner = $1 AND a.name = $2 AND v.version = $3"
            ))
            .bind(owner)
            .bind(name)
            .bind(i64::from(version))
            .fetch_optional(pool)
            .await?
        });
        row.map(agent_of).transpose()
    }

    /// The latest version of each of `owner`'s live agents, by name.
    pub async fn list_agents(&self, owner: &str) -> Result<Vec<StoredAgent>, StoreError> {
        let rows: Vec<Row> = with_pool!(self, |pool| {
            sqlx::query_as(select_versions!(
                "WHERE a.owner = $1 AND a.deleted = 0 AND v.version = a.latest_version \
                 ORDER BY a.name"
            ))
            .bind(owner)
            .fetch_all(pool)
            .await?
        });
        rows.into_iter().map(agent_of).collect()
    }

    /// Every version of `owner`'s live agent `name`, oldest first (empty when there is none).
    pub async fn agent_versions(
        &self,
        owner: &str,
        name: &str,
    ) -> Result<Vec<StoredAgent>, StoreError> {
        let rows: Vec<Row> = with_pool!(self, |pool| {
            sqlx::query_as(select_versions!(
                "WHERE a.owner = $1 AND a.name = $2 AND a.deleted = 0 ORDER BY v.version"
            ))
            .bind(owner)
            .bind(name)
            .fetch_all(pool)
            .await?
        });
        rows.into_iter().map(agent_of).collect()
    }
}
