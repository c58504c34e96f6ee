//! [`Checkpoint`]: the state of a run's tool loop at a point it can resume from (SPEC §11), taken
//! at the start of every iteration and again just before its tool calls run (then with those
//! calls `in_flight`). A run resumed from a checkpoint answers its in-flight calls with
//! [`INTERRUPTED_TOOL`] unless the tool is idempotent (then it runs them again), and goes on
//! with the next iteration. The reflection cadence goes on from its count; cycle detection
//! starts afresh on resume.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::events::Mode;
use super::interrupts::Interrupt;
use super::run::StepRecord;
use crate::llm::{Message, Usage};

/// The observation of a tool call that was running when its instance stopped (SPEC §11).
pub const INTERRUPTED_TOOL: &str =
    "[interrupted: the instance running this tool stopped; the call was not retried]";

/// One tool call that had been asked for but not answered when the checkpoint was taken.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InFlightCall {
    pub call_id: String,
    pub tool: String,
    /// Parsed arguments, or the raw text when they were not JSON.
    pub arguments: Result<Value, String>,
}

/// What the loop needs to go on where it was.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Checkpoint {
    pub mode: Mode,
    pub query: String,
    /// The run's tools after selection.
    pub tools: Vec<String>,
    /// Iterations begun so far, and the run's limit.
    pub iterations: u32,
    pub max_iterations: u32,
    pub tool_calls: u32,
    pub usage: Usage,
    pub messages: Vec<Message>,
    pub steps: Vec<StepRecord>,
    pub processed: Vec<Interrupt>,
    pub in_flight: Vec<InFlightCall>,
    pub checklist_done: bool,
    pub last_parse_failed: bool,
    /// Tools that really ran (the reflection cadence and the checklist count them).
    #[serde(default)]
    pub executions: u32,
}

/// Where a run's checkpoints go (the run manager stores them with the run's events).
pub type CheckpointSink = Arc<dyn Fn(&Checkpoint) + Send + Sync>;

/// A run to go on with: its checkpoint, and whether a client may have seen part of an answer
/// the previous instance streamed (then `answer {status:"reset"}` follows `resumed`).
#[derive(Clone, Debug, PartialEq)]
pub struct Resume {
    pub checkpoint: Checkpoint,
    pub reset_answer: bool,
}
