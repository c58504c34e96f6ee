//! Commands for a run sent through an instance that does not run it (docs/deployment.md): rows of
//! `run_commands`, written only while the run is `running` (the run's row is locked `FOR SHARE`
//! meanwhile, so a command either commits before the run's terminal state or is refused) with
//! a `pg_notify` on [`COMMANDS_CHANNEL`] that fires at commit. The owner does each once, in
//! `seq` order ([`Store::claim_command`]); a takeover reads what is left
//! ([`Store::pending_commands`]).

use uuid::Uuid;

use super::binds::bind;
use super::conversations::{message_row, INSERT_MESSAGE_SQL, TOUCH_CONVERSATION_SQL};
use super::models::{now, uuid};
use super::notify::COMMANDS_CHANNEL;
use super::{with_pool, with_writer, Backend, NewMessage, Store, StoreError};

/// What a command asks of the run's owner.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommandKind {
    /// Queue the stored interrupt message `target` (its text in `content`).
    Interrupt,
    /// Recall the interrupt `target` if still pending; the owner answers in `result`.
    Recall,
    Cancel,
}

impl CommandKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Interrupt => "interrupt",
            Self::Recall => "recall",
            Self::Cancel => "cancel",
        }
    }

    fn parse(text: &str) -> Result<Self, StoreError> {
        Ok(match text {
            "interrupt" => Self::Interrupt,
            "recall" => Self::Recall,
            "cancel" => Self::Cancel,
            other => return Err(StoreError::Corrupt(format!("bad command kind: {other:?}"))),
        })
    }
}

/// A command not done yet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunCommand {
    pub seq: i64,
    pub run_id: Uuid,
    pub kind: CommandKind,
    pub target: Option<Uuid>,
    pub content: Option<String>,
}

#[derive(sqlx::FromRow)]
struct CommandRecord {
    seq: i64,
    run_id: String,
    kind: String,
    target: Option<String>,
    content: Option<String>,
}

impl CommandRecord {
    fn into_model(self) -> Result<RunCommand, StoreError> {
        Ok(RunCommand {
            seq: self.seq,
            run_id: uuid(&self.run_id)?,
            kind: CommandKind::parse(&self.kind)?,
            target: self.target.as_deref().map(uuid).transpose()?,
            content: self.content,
        })
    }
}

const INSERT_COMMAND_SQL: &str = "INSERT INTO run_commands (run_id, kind, target, content, \
     created_at) VALUES ($1, $2, $3, $4, $5) RETURNING seq";

impl Store {
    /// True on PostgreSQL: several instances may share the database (docs/deployment.md).
    pub fn is_shared(&self) -> bool {
        matches!(self.backend, Backend::Postgres(_))
    }

    /// `SELECT … FOR SHARE` of a running run: holds its terminal write back until commit.
    fn lock_running_sql(&self) -> &'static str {
        if self.is_shared() {
            "SELECT id FROM runs WHERE id = $1 AND status = 'running' AND NOT closing FOR SHARE"
        } else {
            "SELECT id FROM runs WHERE id = $1 AND status = 'running'"
        }
    }

    /// Stores the interrupt message and its command for `run_id`'s owner, in one transaction
    /// that wakes the owner at commit; `false` (nothing stored) when the run is not running.
    pub async fn send_interrupt(&self, run_id: Uuid, msg: NewMessage) -> Result<bool, StoreError> {
        let id = msg.id.unwrap_or_else(Uuid::new_v4).to_string();
        let content = super::storable(&msg.content).into_owned();
        let kind = CommandKind::Interrupt;
        let seq = self
            .insert_command(run_id, kind, Some(id), Some(content), Some(&msg))
            .await?;
        Ok(seq.is_some())
    }

    /// Stores a cancel or recall command for `run_id`'s owner (woken at commit); its `seq`, or
    /// `None` when the run is not running.
    pub async fn send_command(
        &self,
        run_id: Uuid,
        kind: CommandKind,
        target: Option<Uuid>,
    ) -> Result<Option<i64>, StoreError> {
        let target = target.map(|t| t.to_string());
        self.insert_command(run_id, kind, target, None, None).await
    }

    /// One command row, after `message` (an interrupt's, stored under the id `target`) when
    /// given, in one transaction that holds the running run's row (see
    /// [`Store::lock_running_sql`]) and wakes the owner at commit; its `seq`, or `None` (nothing
    /// stored) when the run is not running.
    async fn insert_command(
        &self,
        run_id: Uuid,
        kind: CommandKind,
        target: Option<String>,
        content: Option<String>,
        message: Option<&NewMessage>,
    ) -> Result<Option<i64>, StoreError> {
        let _turn = self.write_turn().await;
        let (_, micros) = now();
        let run = run_id.to_string();
        let shared = self.is_shared();
        let seq = with_writer!(self, |pool| {
            let mut tx = pool.begin().await?;
            let running: Option<(String,)> = sqlx::query_as(self.lock_running_sql())
                .bind(run.as_str())
                .fetch_optional(&mut *tx)
                .await?;
            // Not running: nothing is written (the transaction rolls back on drop).
            if running.is_none() {
                None
            } else {
                if let (Some(msg), Some(id)) = (message, &target) {
                    bind(
                        sqlx::query(INSERT_MESSAGE_SQL),
                        message_row(id.clone(), msg, micros),
                    )
                    .execute(&mut *tx)
                    .await?;
                    sqlx::query(TOUCH_CONVERSATION_SQL)
                        .bind(micros)
                        .bind(msg.conversation_id.to_string())
                        .execute(&mut *tx)
                        .await?;
                }
                let seq: i64 = sqlx::query_scalar(INSERT_COMMAND_SQL)
                    .bind(run.as_str())
                    .bind(kind.as_str())
                    .bind(target.as_deref())
                    .bind(content.as_deref())
                    .bind(micros)
                    .fetch_one(&mut *tx)
                    .await?;
                if shared {
                    sqlx::query("SELECT pg_notify($1, $2)")
                        .bind(COMMANDS_CHANNEL)
                        .bind(run.as_str())
                        .execute(&mut *tx)
                        .await?;
                }
                tx.commit().await?;
                Some(seq)
            }
        });
        Ok(seq)
    }

    /// The commands of `run_id` (of every run when `None`) not done yet, in the order sent.
    /// A takeover applies the new owner's share of them (docs/deployment.md: a command answered 202 is
    /// never lost).
    pub async fn pending_commands(
        &self,
        run_id: Option<Uuid>,
    ) -> Result<Vec<RunCommand>, StoreError> {
        let records: Vec<CommandRecord> = with_pool!(self, |pool| {
            sqlx::query_as(
                "SELECT seq, run_id, kind, target, content FROM run_commands \
                 WHERE done_at IS NULL AND ($1 IS NULL OR run_id = $1) ORDER BY seq",
            )
            .bind(run_id.map(|r| r.to_string()))
            .fetch_all(pool)
            .await?
        });
        records.into_iter().map(CommandRecord::into_model).collect()
    }

    /// Marks the command done with `result`; `false` when it already was (someone else did
    /// it), so each command takes effect once.
    pub async fn claim_command(&self, seq: i64, result: Option<&str>) -> Result<bool, StoreError> {
        let _turn = self.write_turn().await;
        let (_, micros) = now();
        let updated = with_writer!(self, |pool| {
            sqlx::query(
                "UPDATE run_commands SET done_at = $1, result = $2 \
                 WHERE seq = $3 AND done_at IS NULL",
            )
            .bind(micros)
            .bind(result)
            .bind(seq)
            .execute(pool)
            .await?
            .rows_affected()
        });
        Ok(updated == 1)
    }

    /// A command's state: `None` while pending (or gone with its run), else its result.
    pub async fn command_result(&self, seq: i64) -> Result<Option<Option<String>>, StoreError> {
        let row: Option<(Option<i64>, Option<String>)> = with_pool!(self, |pool| {
            sqlx::query_as("SELECT done_at, result FROM run_commands WHERE seq = $1")
                .bind(seq)
                .fetch_optional(pool)
                .await?
        });
        Ok(row.and_then(|(done, result)| done.map(|_| result)))
    }
}
