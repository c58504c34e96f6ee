//! Search over an owner's conversations (docs/api.md, `GET /api/conversations?q=`): a
//! conversation matches when every word occurs — as a substring, in any case — in its title or
//! in one of its messages; results come newest first in the plain list's pages and cursor.
//!
//! Messages are found through an index on both backends (the `message_search` migrations):
//! SQLite's FTS5 trigram table, queried with a quoted phrase, and PostgreSQL's pg_trgm index,
//! which serves `ILIKE`. A trigram index cannot look up a word shorter than three characters,
//! so on SQLite such a word is matched with `LIKE` over the messages (PostgreSQL's planner
//! falls back to a scan by itself). Titles are short and scoped by owner: they are scanned.

use super::{decode_cursor, page, ConversationRecord, MAX_PAGE};
use crate::store::{with_pool, Backend, Conversation, Store, StoreError};

/// A value bound to a search statement, in `$n` order.
pub(super) enum Bind {
    Int(i64),
    Text(String),
}

/// `word` as a `LIKE` pattern matching it anywhere, its wildcards escaped with `\`.
pub(super) fn like_pattern(word: &str) -> String {
    let mut out = String::with_capacity(word.len() + 2);
    out.push('%');
    for ch in word.chars() {
        if matches!(ch, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(ch);
    }
    out.push('%');
    out
}

/// `word` as an FTS5 phrase (double quotes doubled), which the trigram tokenizer matches as a
/// substring.
pub(super) fn fts_phrase(word: &str) -> String {
    format!("\"{}\"", word.replace('"', "\"\""))
}

/// The statement after `SELECT … FROM conversations c` and its binds: owner, cursor, then per
/// word a title pattern and (SQLite, three characters or more) an FTS phrase, then the limit.
pub(super) fn search_sql(
    sqlite: bool,
    owner: &str,
    words: &[String],
    cursor: Option<(i64, String)>,
    fetch: i64,
) -> (String, Vec<Bind>) {
    let like = if sqlite { "LIKE" } else { "ILIKE" };
    let mut binds = vec![Bind::Text(owner.to_string())];
    let mut sql = String::from("WHERE c.owner = $1");
    if let Some((micros, id)) = cursor {
        sql.push_str(" AND (c.updated_at < $2 OR (c.updated_at = $2 AND c.id < $3))");
        binds.extend([Bind::Int(micros), Bind::Text(id)]);
    }
    for word in words {
        binds.push(Bind::Text(like_pattern(word)));
        let pattern = binds.len();
        let messages = if sqlite && word.chars().count() >= 3 {
            binds.push(Bind::Text(fts_phrase(word)));
            format!(
                "SELECT m.conversation_id FROM messages_fts JOIN messages m \
                 ON m.pos = messages_fts.rowid WHERE messages_fts MATCH ${}",
                binds.len()
            )
        } else {
            format!(
                "SELECT m.conversation_id FROM messages m \
                 WHERE m.content {like} ${pattern} ESCAPE '\\'"
            )
        };
        sql.push_str(&format!(
            " AND (c.title {like} ${pattern} ESCAPE '\\' OR c.id IN ({messages}))"
        ));
    }
    binds.push(Bind::Int(fetch));
    sql.push_str(&format!(
        " ORDER BY c.updated_at DESC, c.id DESC LIMIT ${}",
        binds.len()
    ));
    (sql, binds)
}

impl Store {
    /// `owner`'s conversations whose title or messages contain every one of `words` (see the
    /// module), paged like [`Store::list_conversations`]: newest first, `limit` clamped to
    /// `1..=MAX_PAGE`, `before` a cursor of a previous page of the same search.
    pub async fn search_conversations(
        &self,
        owner: &str,
        words: &[String],
        limit: u32,
        before: Option<String>,
    ) -> Result<(Vec<Conversation>, Option<String>), StoreError> {
        let limit = limit.clamp(1, MAX_PAGE);
        let cursor = before.as_deref().map(decode_cursor).transpose()?;
        let sqlite = matches!(self.backend, Backend::Sqlite(_));
        let (rest, binds) = search_sql(sqlite, owner, words, cursor, i64::from(limit) + 1);
        let sql = format!("{}{rest}", select_conversations!(""));
        let records: Vec<ConversationRecord> = with_pool!(self, |pool| {
            let mut query = sqlx::query_as(sqlx::AssertSqlSafe(sql.as_str()));
            for value in &binds {
                query = match value {
                    Bind::Int(v) => query.bind(*v),
                    Bind::Text(v) => query.bind(v.as_str()),
                };
            }
            query.fetch_all(pool).await?
        });
        page(records, limit)
    }
}
