//! Conversations and their messages.
//!
//! Listing is keyset-paginated on `(updated_at, id)` — stable under concurrent inserts, unlike
//! OFFSET — and the cursor handed to clients is that key, opaque to them.
//!
//! Messages (insert, delete, list) are in `conversations/messages.rs`.

use uuid::Uuid;

use super::binds::{bind, Arg};
use super::models::ForkedFrom;
use super::models::{now, opt_uuid, time, uuid};
use super::{with_pool, with_writer, Conversation, NewConversation, Store, StoreError};
use crate::domain::Engine;

mod fork;
mod messages;

pub(super) use messages::{message_row, INSERT_MESSAGE_SQL};

/// The largest page `list_conversations` returns, whatever the caller asks.
pub const MAX_PAGE: u32 = 200;

#[derive(sqlx::FromRow)]
struct ConversationRecord {
    id: String,
    owner: String,
    title: Option<String>,
    model: Option<String>,
    system_prompt: Option<String>,
    tools: Option<String>,
    agent: Option<String>,
    agent_version: Option<i64>,
    engine: Option<String>,
    created_at: i64,
    updated_at: i64,
    active_run_id: Option<String>,
    forked_from_conversation: Option<String>,
    forked_from_run: Option<String>,
}

impl ConversationRecord {
    fn into_model(self) -> Result<Conversation, StoreError> {
        let tools = match self.tools.as_deref() {
            None => None,
            Some(json) => Some(
                serde_json::from_str(json)
                    .map_err(|e| StoreError::Corrupt(format!("conversation tools: {e}")))?,
            ),
        };
        Ok(Conversation {
            id: uuid(&self.id)?,
            owner: self.owner,
            title: self.title,
            model: self.model,
            system_prompt: self.system_prompt,
            tools,
            agent: self.agent,
            agent_version: self
                .agent_version
                .map(u32::try_from)
                .transpose()
                .map_err(|e| StoreError::Corrupt(format!("conversation agent_version: {e}")))?,
            engine: self
                .engine
                .as_deref()
                .map(str::parse::<Engine>)
                .transpose()
                .map_err(|e| StoreError::Corrupt(format!("conversation engine: {e}")))?,
            created_at: time(self.created_at)?,
            updated_at: time(self.updated_at)?,
            active_run_id: opt_uuid(self.active_run_id.as_deref())?,
            forked_from: match opt_uuid(self.forked_from_conversation.as_deref())? {
                Some(conversation_id) => Some(ForkedFrom {
                    conversation_id,
                    run_id: opt_uuid(self.forked_from_run.as_deref())?,
                }),
                None => None,
            },
        })
    }
}

/// `SELECT <conversation columns> FROM conversations c <rest>`; `active_run_id` comes from the
/// (at most one, see the unique index) running run.
macro_rules! select_conversations {
    ($rest:literal) => {
        concat!(
            "SELECT c.id, c.owner, c.title, c.model, c.system_prompt, c.tools, c.agent, ",
            "c.agent_version, c.engine, ",
            "c.created_at, c.forked_from_conversation, c.forked_from_run, ",
            "c.updated_at, (SELECT r.id FROM runs r WHERE r.conversation_id = c.id ",
            "AND r.status = 'running' LIMIT 1) AS active_run_id FROM conversations c ",
            $rest
        )
    };
}

// After the macro, which it uses.
mod search;
#[cfg(test)]
mod tests;

fn encode_cursor(c: &Conversation) -> String {
    format!("{}_{}", c.updated_at.timestamp_micros(), c.id)
}

fn decode_cursor(cursor: &str) -> Result<(i64, String), StoreError> {
    let (micros, id) = cursor.split_once('_').ok_or(StoreError::InvalidCursor)?;
    let micros: i64 = micros.parse().map_err(|_| StoreError::InvalidCursor)?;
    let id = Uuid::parse_str(id).map_err(|_| StoreError::InvalidCursor)?;
    Ok((micros, id.to_string()))
}

/// One page of `limit` conversations from `records` (fetched with one row more than `limit`,
/// which tells whether another page exists without a COUNT) and the cursor of the next page.
fn page(
    records: Vec<ConversationRecord>,
    limit: u32,
) -> Result<(Vec<Conversation>, Option<String>), StoreError> {
    let mut items = records
        .into_iter()
        .map(ConversationRecord::into_model)
        .collect::<Result<Vec<_>, _>>()?;
    let next = if items.len() > limit as usize {
        items.truncate(limit as usize);
        items.last().map(encode_cursor)
    } else {
        None
    };
    Ok((items, next))
}

/// Bumps a conversation's `updated_at`. Binds: updated_at, id.
pub(super) const TOUCH_CONVERSATION_SQL: &str =
    "UPDATE conversations SET updated_at = $1 WHERE id = $2";

/// Inserts a conversation. Binds: id, owner, title, model, system_prompt, tools, agent,
/// created_at, updated_at, engine, forked_from_conversation, forked_from_run, agent_version
/// (see [`conversation_row`]).
pub(super) const INSERT_CONVERSATION_SQL: &str =
    "INSERT INTO conversations (id, owner, title, model, system_prompt, tools, agent, \
     created_at, updated_at, engine, forked_from_conversation, forked_from_run, agent_version) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)";

/// The values of [`INSERT_CONVERSATION_SQL`] for `c`, last updated at `updated_micros`.
pub(super) fn conversation_row(c: &Conversation, updated_micros: i64) -> Vec<Arg<'_>> {
    // Infallible: a Vec<String> always serialises.
    let tools = c
        .tools
        .as_ref()
        .map(|t| serde_json::to_string(t).unwrap_or_else(|_| "[]".into()));
    vec![
        Arg::String(c.id.to_string()),
        Arg::Str(c.owner.as_str()),
        Arg::OptStr(c.title.as_deref()),
        Arg::OptStr(c.model.as_deref()),
        Arg::OptStr(c.system_prompt.as_deref()),
        Arg::OptString(tools),
        Arg::OptStr(c.agent.as_deref()),
        Arg::Int(c.created_at.timestamp_micros()),
        Arg::Int(updated_micros),
        Arg::OptStr(c.engine.map(|e| e.as_str())),
        Arg::OptString(c.forked_from.map(|f| f.conversation_id.to_string())),
        Arg::OptString(c.forked_from.and_then(|f| f.run_id).map(|r| r.to_string())),
        Arg::OptInt(c.agent_version.map(i64::from)),
    ]
}

impl Store {
    /// A new conversation of `owner` as [`Store::create_conversation`] would store it (fresh id,
    /// created now), not written yet: [`Store::create_conversation_with_run`] stores it together
    /// with its first run.
    pub fn draft_conversation(owner: &str, new: NewConversation) -> Conversation {
        let (at, _) = now();
        Conversation {
            id: Uuid::new_v4(),
            owner: owner.to_string(),
            title: new.title,
            model: new.model,
            system_prompt: new.system_prompt,
            tools: new.tools,
            agent: new.agent,
            agent_version: new.agent_version,
            engine: new.engine,
            created_at: at,
            updated_at: at,
            active_run_id: None,
            forked_from: None,
        }
    }

    pub async fn create_conversation(
        &self,
        owner: &str,
        new: NewConversation,
    ) -> Result<Conversation, StoreError> {
        let conversation = Store::draft_conversation(owner, new);
        let _turn = self.write_turn().await;
        let micros = conversation.created_at.timestamp_micros();
        with_writer!(self, |pool| {
            let row = conversation_row(&conversation, micros);
            bind(sqlx::query(INSERT_CONVERSATION_SQL), row)
                .execute(pool)
                .await?;
        });
        Ok(conversation)
    }

    pub async fn get_conversation(
        &self,
        owner: &str,
        id: Uuid,
    ) -> Result<Option<Conversation>, StoreError> {
        let record: Option<ConversationRecord> = with_pool!(self, |pool| {
            sqlx::query_as(select_conversations!("WHERE c.id = $1 AND c.owner = $2"))
                .bind(id.to_string())
                .bind(owner)
                .fetch_optional(pool)
                .await?
        });
        record.map(ConversationRecord::into_model).transpose()
    }

    /// Whether a conversation with this id exists, whoever owns it: a front end's thread id that
    /// is another tenant's conversation is refused rather than created twice.
    pub async fn conversation_exists(&self, id: Uuid) -> Result<bool, StoreError> {
        let found: Option<(i32,)> = with_pool!(self, |pool| {
            sqlx::query_as("SELECT 1 FROM conversations WHERE id = $1")
                .bind(id.to_string())
                .fetch_optional(pool)
                .await?
        });
        Ok(found.is_some())
    }

    /// Newest first by `updated_at` (ties by id). `limit` is clamped to `1..=MAX_PAGE`;
    /// `before` is a cursor from a previous page. Returns the page and the cursor of the next
    /// one (`None` at the end). A malformed cursor is [`StoreError::InvalidCursor`].
    pub async fn list_conversations(
        &self,
        owner: &str,
        limit: u32,
        before: Option<String>,
    ) -> Result<(Vec<Conversation>, Option<String>), StoreError> {
        let limit = limit.clamp(1, MAX_PAGE);
        // One extra row tells whether another page exists without a COUNT.
        let fetch = i64::from(limit) + 1;
        let cursor = before.as_deref().map(decode_cursor).transpose()?;
        let records: Vec<ConversationRecord> = with_pool!(self, |pool| match &cursor {
            None => {
                sqlx::query_as(select_conversations!(
                    "WHERE c.owner = $1 ORDER BY c.updated_at DESC, c.id DESC LIMIT $2"
                ))
                .bind(owner)
                .bind(fetch)
                .fetch_all(pool)
                .await?
            }
            Some((micros, id)) => {
                sqlx::query_as(select_conversations!(
                    "WHERE c.owner = $1 AND (c.updated_at < $2 OR (c.updated_at = $2 \
                     AND c.id < $3)) ORDER BY c.updated_at DESC, c.id DESC LIMIT $4"
                ))
                .bind(owner)
                .bind(*micros)
                .bind(id)
                .bind(fetch)
                .fetch_all(pool)
                .await?
            }
        });
        page(records, limit)
    }

    /// Sets the title; `None` when missing or not `owner`'s. `updated_at` (the list's order) is
    /// left alone: a rename is not activity, and bumping it moved the conversation to the top.
    pub async fn rename_conversation(
        &self,
        owner: &str,
        id: Uuid,
        title: &str,
    ) -> Result<Option<Conversation>, StoreError> {
        let _turn = self.write_turn().await;
        let changed = with_writer!(self, |pool| {
            sqlx::query("UPDATE conversations SET title = $1 WHERE id = $2 AND owner = $3")
                .bind(title)
                .bind(id.to_string())
                .bind(owner)
                .execute(pool)
                .await?
                .rows_affected()
        });
        if changed == 0 {
            return Ok(None);
        }
        self.get_conversation(owner, id).await
    }

    /// Marks activity so the conversation moves to the top of the list. Unscoped: called by
    /// the run manager, which already checked ownership.
    pub async fn touch_conversation(&self, id: Uuid) -> Result<(), StoreError> {
        let _turn = self.write_turn().await;
        let (_, micros) = now();
        with_writer!(self, |pool| {
            sqlx::query("UPDATE conversations SET updated_at = $1 WHERE id = $2")
                .bind(micros)
                .bind(id.to_string())
                .execute(pool)
                .await?;
        });
        Ok(())
    }

    /// Deletes the conversation and, by foreign-key cascade, its messages, runs, events,
    /// audit rows and artifacts. `false` when missing or not `owner`'s.
    pub async fn delete_conversation(&self, owner: &str, id: Uuid) -> Result<bool, StoreError> {
        let _turn = self.write_turn().await;
        let deleted = with_writer!(self, |pool| {
            sqlx::query("DELETE FROM conversations WHERE id = $1 AND owner = $2")
                .bind(id.to_string())
                .bind(owner)
                .execute(pool)
                .await?
                .rows_affected()
        });
        Ok(deleted > 0)
    }
}
