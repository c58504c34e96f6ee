//! The rows the store hands out and takes in, plus the conversions from raw database records.
//! Their JSON for clients is the HTTP layer's business (`server::views`).
//!
//! Raw records (`*Record`) hold only driver-neutral types (`String`, `i64`, `Vec<u8>`), so one
//! `#[derive(FromRow)]` serves both SQLite and PostgreSQL; parsing UUIDs, statuses and times
//! happens here, once, and a malformed value becomes [`StoreError::Corrupt`] instead of a panic.

use chrono::{DateTime, Utc};
use serde::Serialize;
use uuid::Uuid;

use super::StoreError;
use crate::agent::checkpoint::CheckpointJson;
use crate::domain::{Engine, MessageKind, MessageRole, Mode, RunStatus, UnknownValue};
use crate::llm::Usage;

/// A conversation (docs/api.md).
#[derive(Clone, Debug, PartialEq)]
pub struct Conversation {
    pub id: Uuid,
    /// The API-key name that owns it.
    pub owner: String,
    pub title: Option<String>,
    pub model: Option<String>,
    pub system_prompt: Option<String>,
    pub tools: Option<Vec<String>>,
    /// The agent (docs/protocols.md) whose settings its runs use.
    pub agent: Option<String>,
    /// The version of its API agent it runs on (docs/api.md "Agents"); `None` for a configured
    /// agent or none.
    pub agent_version: Option<u32>,
    /// The engine of its runs; `REAGENT_DEFAULT_ENGINE` when absent.
    pub engine: Option<Engine>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// The running run of this conversation, if any.
    pub active_run_id: Option<Uuid>,
    /// The conversation and run it was forked from (docs/api.md).
    pub forked_from: Option<ForkedFrom>,
}

/// Where a fork came from: the original conversation and the run its history ends with
/// (`None`: forked with no history).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ForkedFrom {
    pub conversation_id: Uuid,
    pub run_id: Option<Uuid>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct NewConversation {
    pub title: Option<String>,
    pub model: Option<String>,
    pub system_prompt: Option<String>,
    pub tools: Option<Vec<String>>,
    pub agent: Option<String>,
    /// An API agent's version; its latest at creation when absent.
    pub agent_version: Option<u32>,
    pub engine: Option<Engine>,
}

/// One turn of a conversation.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredMessage {
    pub id: Uuid,
    pub conversation_id: Uuid,
    pub role: MessageRole,
    pub kind: MessageKind,
    pub content: String,
    pub run_id: Option<Uuid>,
    pub created_at: DateTime<Utc>,
    /// What the model sent with an answer beyond its text, for the same model's later calls.
    pub continuity: Option<crate::llm::Continuity>,
    /// A user message's images (artifact ids or URLs, never bytes).
    pub images: Vec<crate::domain::MessageImage>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct NewMessage {
    /// A caller-chosen id (an interrupt keeps the id it was accepted under); new when `None`.
    pub id: Option<Uuid>,
    pub conversation_id: Uuid,
    pub role: MessageRole,
    pub kind: MessageKind,
    pub content: String,
    pub run_id: Option<Uuid>,
    /// A user message's images (artifact ids or URLs, never bytes).
    pub images: Vec<crate::domain::MessageImage>,
}

/// An artifact written with its run's start (a query's `data:` image), under an id chosen
/// before: the query message names it.
#[derive(Clone, Debug, PartialEq)]
pub struct NewArtifact {
    pub id: Uuid,
    pub name: String,
    pub mime_type: String,
    pub data: Vec<u8>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct NewRun {
    pub id: Uuid,
    pub conversation_id: Uuid,
    pub owner: String,
    pub mode: Mode,
    pub model: String,
    /// The run's span as a W3C `traceparent` (tracing on), kept for a resumed run's trace.
    pub traceparent: Option<String>,
}

/// The terminal state of a run, written once by [`super::Store::finish_run`].
#[derive(Clone, Debug, PartialEq)]
pub struct RunFinish {
    pub status: RunStatus,
    pub iterations: u32,
    pub tool_calls: u32,
    pub usage: Usage,
    pub error: Option<String>,
}

/// What the shared event writer commits for one run in one transaction: the run's next
/// events (ascending, contiguous with what is stored), a raised event-id ceiling when the run
/// needs its next block of ids, and, at its end, its terminal state.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunBatch {
    pub run_id: Uuid,
    pub events: Vec<StoredEvent>,
    /// Raises `runs.event_ceiling` to this (never lowers it), see [`EVENT_ID_BLOCK`].
    pub ceiling: Option<i64>,
    /// The run's latest checkpoint, taken once the batch's events were appended; shared with
    /// the writer that holds it until stored, joined into one string only to be written.
    pub checkpoint: Option<std::sync::Arc<CheckpointJson>>,
    pub finish: Option<FinalState>,
    /// The lease epoch the writer holds the run under: the batch is written only while the
    /// run's row still has it (fencing, docs/deployment.md); `None` writes unconditionally.
    pub epoch: Option<i64>,
}

/// What [`Store::write_batches`](super::Store::write_batches) did with one batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Written {
    /// Stored; `true` when its terminal state was written by this call.
    Stored(bool),
    /// Refused: the run's lease epoch is no longer the batch's (another instance took it).
    Fenced,
    /// Its events but `done` stored, its terminal state held back: commands sent through
    /// other instances were pending when it closed them ([`FinalState::close_commands`]).
    Held,
}

/// A run this instance took over: its id and the lease epoch it now holds it under.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TakenRun {
    pub id: Uuid,
    pub epoch: i64,
}

/// One live instance (`GET /api/instances`).
#[derive(Clone, Debug, PartialEq)]
pub struct InstanceRow {
    pub id: String,
    pub started_at: DateTime<Utc>,
    pub last_seen: DateTime<Utc>,
    /// Running runs whose lease it holds.
    pub runs_owned: i64,
}

/// Event ids are reserved this many at a time: `runs.event_ceiling` (committed) bounds the ids
/// clients may have been sent, and a run is created with the first block reserved. Generous, so
/// that raising it is a rare extra statement on the event writer's path.
pub const EVENT_ID_BLOCK: i64 = 1024;

/// A run's terminal state and the answer message that goes with it, written in the same
/// transaction as the run's last events (including `done`).
#[derive(Clone, Debug, PartialEq)]
pub struct FinalState {
    pub finish: RunFinish,
    /// The assistant's answer, stored only if this write is the one that finished the run.
    pub answer: Option<NewMessage>,
    /// A run on a budget: its calls not settled yet, settled in the same transaction, and its
    /// other reservations released (see `Store::book`); `None` without budgets.
    pub budget: Option<Vec<super::Settlement>>,
    /// PostgreSQL: close the run's commands in the same transaction (none is taken after it);
    /// when some are pending the terminal state and `done` are not written ([`Written::Held`])
    /// and the owner does them first.
    pub close_commands: bool,
}

/// A run (docs/api.md).
#[derive(Clone, Debug, PartialEq)]
pub struct RunRow {
    pub id: Uuid,
    pub conversation_id: Uuid,
    pub owner: String,
    pub status: RunStatus,
    pub mode: Mode,
    pub model: String,
    pub iterations: u32,
    pub tool_calls: u32,
    pub usage: Usage,
    pub started_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
    pub error: Option<String>,
}

/// One SSE event of a run's log: `seq` is the SSE id (1, 2, …), `data` one-line JSON.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, sqlx::FromRow)]
pub struct StoredEvent {
    pub seq: i64,
    pub name: String,
    pub data: String,
}

/// One tool call, for the audit trail.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AuditRow {
    pub run_id: Uuid,
    pub conversation_id: Uuid,
    pub call_id: String,
    pub tool: String,
    pub arguments: serde_json::Value,
    pub result_size: i64,
    pub duration_ms: i64,
    pub outcome: String,
    pub at: DateTime<Utc>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct StoredArtifact {
    pub id: Uuid,
    pub run_id: Uuid,
    pub name: String,
    pub mime_type: String,
    pub data: Vec<u8>,
}

// ---- conversions -------------------------------------------------------------------------

/// Now, truncated to what the database keeps (microseconds), so a returned struct equals the
/// same row read back later.
pub(crate) fn now() -> (DateTime<Utc>, i64) {
    let micros = Utc::now().timestamp_micros();
    // Infallible: a value just produced by `timestamp_micros` is in range.
    let at = DateTime::from_timestamp_micros(micros).unwrap_or_default();
    (at, micros)
}

pub(crate) fn time(micros: i64) -> Result<DateTime<Utc>, StoreError> {
    DateTime::from_timestamp_micros(micros)
        .ok_or_else(|| StoreError::Corrupt(format!("time out of range: {micros}")))
}

pub(crate) fn uuid(text: &str) -> Result<Uuid, StoreError> {
    Uuid::parse_str(text).map_err(|_| StoreError::Corrupt(format!("bad uuid: {text:?}")))
}

pub(crate) fn opt_uuid(text: Option<&str>) -> Result<Option<Uuid>, StoreError> {
    text.map(uuid).transpose()
}

/// A stored enum column (status, mode, role, kind) read back as its value; text the enum does
/// not know means the row was not written by us.
pub(crate) fn text<T: std::str::FromStr<Err = UnknownValue>>(text: &str) -> Result<T, StoreError> {
    text.parse()
        .map_err(|e: UnknownValue| StoreError::Corrupt(format!("bad {}: {:?}", e.what, e.text)))
}

pub(crate) fn status(raw: &str) -> Result<RunStatus, StoreError> {
    text(raw)
}

/// Counters are unsigned in the API and signed 64-bit in SQL; clamp rather than wrap.
pub(crate) fn to_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

pub(crate) fn to_u64(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

pub(crate) fn to_u32(v: i64) -> u32 {
    u32::try_from(v.max(0)).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_clamp_instead_of_wrapping() {
        assert_eq!(to_i64(u64::MAX), i64::MAX);
        assert_eq!(to_u64(-5), 0);
        assert_eq!(to_u32(-1), 0);
        assert_eq!(to_u32(i64::MAX), u32::MAX);
    }

    #[test]
    fn statuses_round_trip_and_garbage_is_corrupt() {
        for s in [
            RunStatus::Running,
            RunStatus::Completed,
            RunStatus::MaxIterations,
            RunStatus::Cancelled,
            RunStatus::Failed,
        ] {
            assert_eq!(status(s.as_str()).unwrap(), s);
        }
        assert!(matches!(status("done"), Err(StoreError::Corrupt(_))));
        assert!(matches!(
            text::<MessageRole>("system"),
            Err(StoreError::Corrupt(_))
        ));
        assert_eq!(
            text::<MessageKind>("interrupt").unwrap(),
            MessageKind::Interrupt
        );
        assert_eq!(text::<Mode>("json").unwrap(), Mode::Json);
        assert!(matches!(uuid("nope"), Err(StoreError::Corrupt(_))));
        assert!(matches!(time(i64::MAX), Err(StoreError::Corrupt(_))));
    }

    #[test]
    fn now_is_exactly_representable() {
        let (at, micros) = now();
        assert_eq!(at.timestamp_micros(), micros);
        assert_eq!(time(micros).unwrap(), at);
    }
}
