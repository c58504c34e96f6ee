//! Messages: appended in order, a conversation's `updated_at` bumped in the same transaction.

use uuid::Uuid;

use super::TOUCH_CONVERSATION_SQL;
use crate::domain::{images_column, images_of_column};
use crate::llm::Continuity;
use crate::store::binds::{bind, Arg};
use crate::store::models::{now, opt_uuid, text, time, uuid};
use crate::store::{with_pool, with_writer, NewMessage, Store, StoreError, StoredMessage};

#[derive(sqlx::FromRow)]
struct MessageRecord {
    id: String,
    conversation_id: String,
    role: String,
    kind: String,
    content: String,
    run_id: Option<String>,
    created_at: i64,
    continuity: Option<String>,
    images: Option<String>,
}

impl MessageRecord {
    fn into_model(self) -> Result<StoredMessage, StoreError> {
        Ok(StoredMessage {
            id: uuid(&self.id)?,
            conversation_id: uuid(&self.conversation_id)?,
            role: text(&self.role)?,
            kind: text(&self.kind)?,
            content: self.content,
            run_id: opt_uuid(self.run_id.as_deref())?,
            created_at: time(self.created_at)?,
            // Unreadable continuity (written by a newer version?) is only lost, never an error:
            // the message then goes to the model plain.
            continuity: self
                .continuity
                .and_then(|json| serde_json::from_str(&json).ok()),
            images: images_of_column(self.images.as_deref()),
        })
    }
}

/// Inserts a message. Binds: id, conversation_id, role, kind, content, run_id, created_at,
/// images.
pub(in crate::store) const INSERT_MESSAGE_SQL: &str =
    "INSERT INTO messages (id, conversation_id, role, kind, content, run_id, created_at, images) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)";

/// The values of [`INSERT_MESSAGE_SQL`] for `m` under `id` (NUL in the content stored as
/// U+FFFD, see [`crate::store::storable`]), created at `micros`.
pub(in crate::store) fn message_row(id: String, m: &NewMessage, micros: i64) -> Vec<Arg<'_>> {
    let content = match crate::store::storable(&m.content) {
        std::borrow::Cow::Borrowed(text) => Arg::Str(text),
        std::borrow::Cow::Owned(text) => Arg::String(text),
    };
    vec![
        Arg::String(id),
        Arg::String(m.conversation_id.to_string()),
        Arg::Str(m.role.as_str()),
        Arg::Str(m.kind.as_str()),
        content,
        Arg::OptString(m.run_id.map(|r| r.to_string())),
        Arg::Int(micros),
        Arg::OptString(images_column(&m.images)),
    ]
}

impl Store {
    /// Appends a message and bumps the conversation's `updated_at`, in one transaction.
    pub async fn add_message(&self, new: NewMessage) -> Result<StoredMessage, StoreError> {
        let _turn = self.write_turn().await;
        let id = new.id.unwrap_or_else(Uuid::new_v4);
        let (at, micros) = now();
        let conversation_id = new.conversation_id.to_string();
        let content = crate::store::storable(&new.content).into_owned();
        with_writer!(self, |pool| {
            let mut tx = pool.begin().await?;
            let row = message_row(id.to_string(), &new, micros);
            bind(sqlx::query(INSERT_MESSAGE_SQL), row)
                .execute(&mut *tx)
                .await?;
            sqlx::query(TOUCH_CONVERSATION_SQL)
                .bind(micros)
                .bind(&conversation_id)
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
        });
        Ok(StoredMessage {
            id,
            conversation_id: new.conversation_id,
            role: new.role,
            kind: new.kind,
            content,
            run_id: new.run_id,
            created_at: at,
            continuity: None,
            images: new.images,
        })
    }

    /// Keeps `continuity` with the answer of run `run_id` (written with the run's final state).
    /// False when the run has no stored answer.
    pub async fn set_answer_continuity(
        &self,
        run_id: Uuid,
        continuity: &Continuity,
    ) -> Result<bool, StoreError> {
        let json = serde_json::to_string(continuity)
            .map_err(|e| StoreError::Corrupt(format!("continuity: {e}")))?;
        let _turn = self.write_turn().await;
        let updated = with_writer!(self, |pool| {
            sqlx::query("UPDATE messages SET continuity = $1 WHERE run_id = $2 AND kind = 'answer'")
                .bind(&json)
                .bind(run_id.to_string())
                .execute(pool)
                .await?
                .rows_affected()
        });
        Ok(updated > 0)
    }

    /// Removes one message (an interrupt recalled before the agent drained it).
    pub async fn delete_message(
        &self,
        conversation_id: Uuid,
        id: Uuid,
    ) -> Result<bool, StoreError> {
        let _turn = self.write_turn().await;
        let deleted = with_writer!(self, |pool| {
            sqlx::query("DELETE FROM messages WHERE conversation_id = $1 AND id = $2")
                .bind(conversation_id.to_string())
                .bind(id.to_string())
                .execute(pool)
                .await?
                .rows_affected()
        });
        Ok(deleted > 0)
    }

    /// Whether the conversation has a message with this id (an interrupt that was accepted).
    pub async fn has_message(&self, conversation_id: Uuid, id: Uuid) -> Result<bool, StoreError> {
        let found: Option<(String,)> = with_pool!(self, |pool| {
            sqlx::query_as("SELECT id FROM messages WHERE conversation_id = $1 AND id = $2")
                .bind(conversation_id.to_string())
                .bind(id.to_string())
                .fetch_optional(pool)
                .await?
        });
        Ok(found.is_some())
    }

    /// The conversation's messages, oldest first (insertion order).
    pub async fn list_messages(
        &self,
        conversation_id: Uuid,
    ) -> Result<Vec<StoredMessage>, StoreError> {
        let records: Vec<MessageRecord> = with_pool!(self, |pool| {
            sqlx::query_as(
                "SELECT id, conversation_id, role, kind, content, run_id, created_at, continuity, \
                 images FROM messages WHERE conversation_id = $1 ORDER BY pos",
            )
            .bind(conversation_id.to_string())
            .fetch_all(pool)
            .await?
        });
        records.into_iter().map(MessageRecord::into_model).collect()
    }
}
