//! Forks (docs/api.md): a new conversation with the settings of another and a copy of its
//! history up to one run's turn, written in one transaction.

use uuid::Uuid;

use crate::store::binds::bind;
use crate::store::conversations::{conversation_row, INSERT_CONVERSATION_SQL};
use crate::store::models::{now, ForkedFrom};
use crate::store::{with_pool, with_writer, Conversation, Store, StoreError};

/// The ids of conversation `$1`'s messages up to and including the last one of run `$2`
/// (by insertion order).
const MESSAGES_UNTIL_SQL: &str =
    "SELECT id FROM messages WHERE conversation_id = $1 AND pos <= (SELECT MAX(pos) FROM \
     messages WHERE conversation_id = $1 AND run_id = $2) ORDER BY pos";

/// Copies message `$3` into conversation `$2` under the id `$1`; time, continuity and images
/// (the same artifacts: a fork is the same tenant's) kept.
const COPY_MESSAGE_SQL: &str =
    "INSERT INTO messages (id, conversation_id, role, kind, content, run_id, created_at, \
     continuity, images) SELECT $1, $2, role, kind, content, run_id, created_at, continuity, \
     images FROM messages WHERE id = $3";

impl Store {
    /// Whether conversation `conversation` holds a message of run `run`: its own, or one a
    /// fork copied (copies keep the id of the run that wrote them).
    pub async fn holds_turn_of(&self, conversation: Uuid, run: Uuid) -> Result<bool, StoreError> {
        let found: Option<i64> = with_pool!(self, |pool| {
            sqlx::query_scalar(
                "SELECT CAST(1 AS BIGINT) FROM messages WHERE conversation_id = $1 \
                 AND run_id = $2 LIMIT 1",
            )
            .bind(conversation.to_string())
            .bind(run.to_string())
            .fetch_optional(pool)
            .await?
        });
        Ok(found.is_some())
    }

    /// Stores a fork of `source` (already checked to be the caller's) titled `title`, holding
    /// its history up to `until_run`'s last message (none without it). The caller checks that
    /// the run is a finished run of `source`.
    pub async fn fork_conversation(
        &self,
        source: &Conversation,
        until_run: Option<Uuid>,
        title: Option<String>,
    ) -> Result<Conversation, StoreError> {
        let (at, micros) = now();
        let fork = Conversation {
            id: Uuid::new_v4(),
            title,
            created_at: at,
            updated_at: at,
            active_run_id: None,
            forked_from: Some(ForkedFrom {
                conversation_id: source.id,
                run_id: until_run,
            }),
            ..source.clone()
        };
        let _turn = self.write_turn().await;
        with_writer!(self, |pool| {
            let mut tx = pool.begin().await?;
            bind(
                sqlx::query(INSERT_CONVERSATION_SQL),
                conversation_row(&fork, micros),
            )
            .execute(&mut *tx)
            .await?;
            if let Some(run) = until_run {
                let ids: Vec<(String,)> = sqlx::query_as(MESSAGES_UNTIL_SQL)
                    .bind(source.id.to_string())
                    .bind(run.to_string())
                    .fetch_all(&mut *tx)
                    .await?;
                for (old,) in ids {
                    sqlx::query(COPY_MESSAGE_SQL)
                        .bind(Uuid::new_v4().to_string())
                        .bind(fork.id.to_string())
                        .bind(old)
                        .execute(&mut *tx)
                        .await?;
                }
            }
            tx.commit().await?;
        });
        Ok(fork)
    }
}
