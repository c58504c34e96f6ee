//! Artifacts: documents tools produced, kept in the database so they survive restarts and
//! follow the run's tenancy (the owner is copied from the run, not trusted from the caller).
//!
//! [`Store`] is also the engine's [`ArtifactSink`], so the server hands the store itself to
//! agents and artifacts land here directly.

use async_trait::async_trait;
use uuid::Uuid;

use super::models::{now, uuid};
use super::{with_pool, with_writer, Store, StoreError, StoredArtifact};
use crate::agent::artifacts::ArtifactSink;
use crate::domain::{artifact_url, ArtifactRef};
use crate::tools::Artifact;

#[derive(sqlx::FromRow)]
struct ArtifactRecord {
    id: String,
    run_id: String,
    name: String,
    mime_type: String,
    data: Vec<u8>,
}

impl Store {
    /// Stores an artifact of `run_id` under the run's owner. [`StoreError::NotFound`] when the
    /// run does not exist.
    pub async fn put_artifact(
        &self,
        run_id: Uuid,
        artifact: Artifact,
    ) -> Result<ArtifactRef, StoreError> {
        let _turn = self.write_turn().await;
        let id = Uuid::new_v4();
        let (_, micros) = now();
        let size = artifact.data.len();
        let inserted = with_writer!(self, |pool| {
            // INSERT … SELECT: the owner comes from the run in the same statement, and an
            // unknown run inserts nothing instead of failing on the foreign key.
            sqlx::query(
                "INSERT INTO artifacts (id, run_id, owner, name, mime_type, size, data, \
                 created_at) SELECT $1, r.id, r.owner, $2, $3, $4, $5, $6 FROM runs r \
                 WHERE r.id = $7",
            )
            .bind(id.to_string())
            .bind(&artifact.name)
            .bind(&artifact.mime_type)
            .bind(i64::try_from(size).unwrap_or(i64::MAX))
            .bind(&artifact.data)
            .bind(micros)
            .bind(run_id.to_string())
            .execute(pool)
            .await?
            .rows_affected()
        });
        if inserted == 0 {
            return Err(StoreError::NotFound);
        }
        let id = id.to_string();
        Ok(ArtifactRef {
            url: artifact_url(&id),
            id,
            name: artifact.name,
            mime_type: artifact.mime_type,
            size,
        })
    }

    /// An artifact of `owner`; `None` when missing or someone else's.
    pub async fn get_artifact(
        &self,
        owner: &str,
        id: Uuid,
    ) -> Result<Option<StoredArtifact>, StoreError> {
        let record: Option<ArtifactRecord> = with_pool!(self, |pool| {
            sqlx::query_as(
                "SELECT id, run_id, name, mime_type, data FROM artifacts \
                 WHERE id = $1 AND owner = $2",
            )
            .bind(id.to_string())
            .bind(owner)
            .fetch_optional(pool)
            .await?
        });
        record
            .map(|r| {
                Ok(StoredArtifact {
                    id: uuid(&r.id)?,
                    run_id: uuid(&r.run_id)?,
                    name: r.name,
                    mime_type: r.mime_type,
                    data: r.data,
                })
            })
            .transpose()
    }
}

#[async_trait]
impl ArtifactSink for Store {
    /// The engine sees only a short reason; the detail goes to the log, never to a client.
    async fn store(&self, run_id: &str, artifact: Artifact) -> Result<ArtifactRef, String> {
        let run = Uuid::parse_str(run_id).map_err(|_| "invalid run id".to_string())?;
        self.put_artifact(run, artifact).await.map_err(|e| {
            tracing::warn!(run_id, error = %e, "storing an artifact failed");
            "the artifact could not be stored".to_string()
        })
    }
}
