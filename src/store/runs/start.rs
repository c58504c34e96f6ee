//! Run starts, group-committed: a start's run, its query and (when new) its conversation in
//! one transaction shared with the starts queued meanwhile.

use uuid::Uuid;

use super::{run_row, INSERT_RUN_SQL};
use crate::store::binds::{insert_many, touch_conversations, Arg};
use crate::store::conversations::{
    conversation_row, message_row, INSERT_CONVERSATION_SQL, INSERT_MESSAGE_SQL,
};
use crate::store::group::Waiting;
use crate::store::models::now;
use crate::store::{with_writer, Conversation, NewArtifact, NewMessage, NewRun, Store, StoreError};

/// A run start: its run, its query, and its conversation when that is new too.
#[derive(Debug)]
pub(crate) struct StartRow {
    conversation: Option<Conversation>,
    /// Earlier turns a new conversation is seeded with, stored before the query.
    history: Vec<NewMessage>,
    run: NewRun,
    query: NewMessage,
    /// The query's images stored with it (their ids are in `query.images`).
    artifacts: Vec<NewArtifact>,
    /// The run that must still be the conversation's latest ([`RunStart::after_run`]).
    after_run: Option<Uuid>,
    /// The facade's record of the request ([`RunStart::record`]).
    record: Option<String>,
}

/// A run start as [`Store::start_run`] writes it.
#[derive(Debug)]
pub struct RunStart<'a> {
    /// A new conversation (from [`Store::draft_conversation`]) to store with the run.
    pub conversation: Option<&'a Conversation>,
    /// Earlier turns a new conversation is seeded with, stored before the query.
    pub history: Vec<NewMessage>,
    pub run: NewRun,
    pub query: NewMessage,
    /// Artifacts of the run stored in the same transaction (the query's images).
    pub artifacts: Vec<NewArtifact>,
    /// Stored only while this run is the conversation's latest; else [`StoreError::Conflict`]
    /// and nothing is written (a response continuing an earlier one that another just
    /// continued, docs/protocols.md).
    pub after_run: Option<Uuid>,
    /// What the request asked for as the API that took it keeps it (JSON: the Responses API's
    /// request), stored beside the run in the same transaction.
    pub record: Option<String>,
}

/// Inserts an artifact of a run being started; the owner is the run's.
const INSERT_ARTIFACT_SQL: &str =
    "INSERT INTO artifacts (id, run_id, owner, name, mime_type, size, data, created_at) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)";

/// The id of a conversation's latest run (as [`Store::latest_run`] orders them).
const LATEST_RUN_SQL: &str = "SELECT id FROM runs WHERE conversation_id = $1 \
     ORDER BY started_at DESC, id DESC LIMIT 1";

/// Keeps a facade's record of a run's request (`responses`, docs/protocols.md).
pub(super) const INSERT_RECORD_SQL: &str =
    "INSERT INTO responses (run_id, request) VALUES ($1, $2)";

impl Store {
    /// Records a new `running` run and its query message, and bumps the conversation's
    /// `updated_at`, in one transaction (group-committed with concurrent starts, see
    /// [`Store::start_grouped`]). Fails with [`StoreError::Conflict`] when the conversation
    /// already has a running run; then nothing is written.
    pub async fn create_run_with_query(
        &self,
        new: NewRun,
        query: NewMessage,
    ) -> Result<(), StoreError> {
        self.start_grouped(StartRow {
            conversation: None,
            history: Vec::new(),
            run: new,
            query,
            artifacts: Vec::new(),
            after_run: None,
            record: None,
        })
        .await
        .map(|_| ())
    }

    /// Any run start: the run, its query and their artifacts, with the new conversation and
    /// its seed history when there is one, in one (group-committed) transaction. Returns the
    /// run's `started_at` as stored (µs), so no one reads the run back for it.
    pub async fn start_run(&self, start: RunStart<'_>) -> Result<i64, StoreError> {
        self.start_grouped(StartRow {
            conversation: start.conversation.cloned(),
            history: start.history,
            run: start.run,
            query: start.query,
            artifacts: start.artifacts,
            after_run: start.after_run,
            record: start.record,
        })
        .await
    }

    /// Stores a new conversation (from [`Store::draft_conversation`]) with its first `running`
    /// run and that run's query in one transaction — the start of `POST /api/chat` without a
    /// conversation id costs one write transaction (shared with concurrent starts), and a
    /// failed start leaves nothing behind.
    pub async fn create_conversation_with_run(
        &self,
        conversation: &Conversation,
        new: NewRun,
        query: NewMessage,
    ) -> Result<(), StoreError> {
        self.create_conversation_with_history(conversation, Vec::new(), new, query)
            .await
    }

    /// Like [`Store::create_conversation_with_run`], the conversation seeded with earlier
    /// turns (`history`, oldest first, stored before the query) in the same transaction: a
    /// client that brings its own history (the OpenAI-compatible API) sees it in the
    /// conversation like any other.
    pub async fn create_conversation_with_history(
        &self,
        conversation: &Conversation,
        history: Vec<NewMessage>,
        new: NewRun,
        query: NewMessage,
    ) -> Result<(), StoreError> {
        self.start_grouped(StartRow {
            conversation: Some(conversation.clone()),
            history,
            run: new,
            query,
            artifacts: Vec::new(),
            after_run: None,
            record: None,
        })
        .await
        .map(|_| ())
    }

    /// Group commit of run starts (`group.rs`): the start joins a queue, and whoever gets
    /// the turn writes every queued start in one transaction. 2000 runs started at once were
    /// 2000 write transactions taking turns, ~2 ms each (the commits' WAL writes); now they are
    /// a few. If the shared transaction fails (one start conflicting, say), each start of it is
    /// retried alone, so one start's error never fails another.
    async fn start_grouped(&self, row: StartRow) -> Result<i64, StoreError> {
        let store = self.clone();
        // SQLite: the turn is the write gate itself, held while the group is written.
        let gate = self.write_gate.as_deref();
        self.starts
            .join(row, gate, move |batch| async move {
                store.write_starts(batch).await
            })
            .await
    }

    /// Writes a group of starts; the caller holds the write turn (see `start_grouped`).
    async fn write_starts(&self, batch: Waiting<StartRow, i64>) {
        let (_, micros) = now();
        let (rows, replies): (Vec<StartRow>, Vec<_>) = batch.into_iter().unzip();
        let all: Vec<&StartRow> = rows.iter().collect();
        match self.insert_starts(&all, micros).await {
            Ok(()) => {
                for reply in replies {
                    let _ = reply.send(Ok(micros));
                }
            }
            Err(e) if rows.len() == 1 => {
                if let Some(reply) = replies.into_iter().next() {
                    let _ = reply.send(Err(e));
                }
            }
            Err(_) => {
                for (row, reply) in rows.iter().zip(replies) {
                    let written = self.insert_starts(&[row], micros).await;
                    let _ = reply.send(written.map(|()| micros));
                }
            }
        }
    }

    /// One transaction writing `rows`: the new conversations, the runs, the messages (each
    /// start's history then its query) and the `updated_at` of the existing conversations
    /// started in, each kind as one multi-row statement ([`many_rows`]). The caller holds the
    /// write turn.
    async fn insert_starts(&self, rows: &[&StartRow], micros: i64) -> Result<(), StoreError> {
        let conversations: Vec<Vec<Arg<'_>>> = rows
            .iter()
            .filter_map(|r| r.conversation.as_ref())
            .map(|c| conversation_row(c, micros))
            .collect();
        let runs: Vec<Vec<Arg<'_>>> = rows
            .iter()
            .map(|r| run_row(&r.run, micros, self.lease_holder()))
            .collect();
        let messages: Vec<Vec<Arg<'_>>> = rows
            .iter()
            .flat_map(|r| r.history.iter().chain(std::iter::once(&r.query)))
            .map(|m| message_row(m.id.unwrap_or_else(Uuid::new_v4).to_string(), m, micros))
            .collect();
        let touched: Vec<String> = rows
            .iter()
            .filter(|r| r.conversation.is_none())
            .map(|r| r.query.conversation_id.to_string())
            .collect();
        let numbered = self.is_shared();
        // Conversations before what refers to them.
        let inserts = [
            (INSERT_CONVERSATION_SQL, conversations),
            (INSERT_RUN_SQL, runs),
            (INSERT_MESSAGE_SQL, messages),
        ];
        with_writer!(self, |pool| {
            let mut tx = pool.begin().await?;
            for row in rows {
                if let Some(after) = row.after_run {
                    let latest: Option<String> = sqlx::query_scalar(LATEST_RUN_SQL)
                        .bind(row.run.conversation_id.to_string())
                        .fetch_optional(&mut *tx)
                        .await?;
                    if latest != Some(after.to_string()) {
                        return Err(StoreError::Conflict(format!(
                            "the run {after} is no longer the conversation's latest"
                        )));
                    }
                }
            }
            for (sql, values) in inserts {
                insert_many!(tx, sql, values, numbered);
            }
            // One statement each: an image is up to megabytes, batching saves nothing.
            for row in rows {
                for a in &row.artifacts {
                    sqlx::query(INSERT_ARTIFACT_SQL)
                        .bind(a.id.to_string())
                        .bind(row.run.id.to_string())
                        .bind(&row.run.owner)
                        .bind(&a.name)
                        .bind(&a.mime_type)
                        .bind(i64::try_from(a.data.len()).unwrap_or(i64::MAX))
                        .bind(&a.data)
                        .bind(micros)
                        .execute(&mut *tx)
                        .await?;
                }
            }
            for row in rows {
                if let Some(record) = &row.record {
                    sqlx::query(INSERT_RECORD_SQL)
                        .bind(row.run.id.to_string())
                        .bind(record)
                        .execute(&mut *tx)
                        .await?;
                }
            }
            touch_conversations!(tx, touched, micros);
            tx.commit().await?;
        });
        Ok(())
    }
}
