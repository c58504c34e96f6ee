//! The Responses API's own rows (docs/protocols.md): what each response's request asked for,
//! kept beside its run; and deleting one run with what it wrote into its conversation.

use uuid::Uuid;

use super::{with_pool, with_writer, Store, StoreError};

impl Store {
    /// Keeps `request` (JSON) as what run `run_id`'s response asked for.
    pub async fn put_response_request(
        &self,
        run_id: Uuid,
        request: &str,
    ) -> Result<(), StoreError> {
        let _turn = self.write_turn().await;
        with_writer!(self, |pool| {
            sqlx::query("INSERT INTO responses (run_id, request) VALUES ($1, $2)")
                .bind(run_id.to_string())
                .bind(request)
                .execute(pool)
                .await?;
        });
        Ok(())
    }

    /// What run `run_id`'s response asked for; `None` for a run the Responses API did not
    /// start. Unscoped: callers read the run (scoped by owner) first.
    pub async fn response_request(&self, run_id: Uuid) -> Result<Option<String>, StoreError> {
        let row: Option<(String,)> = with_pool!(self, |pool| {
            sqlx::query_as("SELECT request FROM responses WHERE run_id = $1")
                .bind(run_id.to_string())
                .fetch_optional(pool)
                .await?
        });
        Ok(row.map(|(r,)| r))
    }

    /// Deletes `owner`'s finished run `run_id` with its events (by cascade) and the messages
    /// it wrote in its conversation. `false` when missing, not `owner`'s or still running.
    pub async fn delete_run(&self, owner: &str, run_id: Uuid) -> Result<bool, StoreError> {
        let _turn = self.write_turn().await;
        let deleted = with_writer!(self, |pool| {
            let mut tx = pool.begin().await?;
            let conv: Option<(String,)> = sqlx::query_as(
                "DELETE FROM runs WHERE id = $1 AND owner = $2 AND status <> 'running' \
                 RETURNING conversation_id",
            )
            .bind(run_id.to_string())
            .bind(owner)
            .fetch_optional(&mut *tx)
            .await?;
            if let Some((conv,)) = &conv {
                sqlx::query("DELETE FROM messages WHERE conversation_id = $1 AND run_id = $2")
                    .bind(conv)
                    .bind(run_id.to_string())
                    .execute(&mut *tx)
                    .await?;
            }
            tx.commit().await?;
            conv.is_some()
        });
        Ok(deleted)
    }
}
