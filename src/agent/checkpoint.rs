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

mod json;

pub use json::{
    CheckpointJson, JsonList, CHUNK as JSON_CHUNK, KEEP_FROM as JSON_KEEP_FROM, STEPS_KEEP_FROM,
};

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

/// Where a run's checkpoints go, as the JSON of a [`Checkpoint`] (the run manager stores them
/// with the run's events). The loop serialises them itself, keeping the JSON of its history
/// between checkpoints in shared chunks ([`JsonList`]), so a checkpoint neither serialises nor
/// copies the whole history; the writer joins the pieces when it stores one.
pub type CheckpointSink = Arc<dyn Fn(CheckpointJson) + Send + Sync>;

/// A [`Checkpoint`]'s fields borrowed from the loop, except the two lists that grow with the
/// run (messages, steps), which [`CheckpointHead::to_json`] takes already serialised.
#[derive(Serialize)]
pub struct CheckpointHead<'a> {
    pub mode: Mode,
    pub query: &'a str,
    pub tools: &'a [String],
    pub iterations: u32,
    pub max_iterations: u32,
    pub tool_calls: u32,
    pub usage: Usage,
    pub processed: &'a [Interrupt],
    pub in_flight: Vec<InFlightCall>,
    pub checklist_done: bool,
    pub last_parse_failed: bool,
    pub executions: u32,
}

impl CheckpointHead<'_> {
    /// The checkpoint's JSON, as `serde_json::to_string(&Checkpoint)` would write it (fields
    /// in another order), with `messages` and `steps` writing those two arrays.
    pub fn to_json(
        &self,
        messages: impl FnOnce(&mut CheckpointJson) -> serde_json::Result<()>,
        steps: impl FnOnce(&mut CheckpointJson) -> serde_json::Result<()>,
    ) -> serde_json::Result<CheckpointJson> {
        let mut head = serde_json::to_string(self)?;
        // A struct serialises as a non-empty object: drop its closing brace, append the lists.
        head.pop();
        head.push_str(",\"messages\":");
        let mut out = CheckpointJson::from(head);
        messages(&mut out)?;
        out.push_str(",\"steps\":");
        steps(&mut out)?;
        out.push_str("}");
        Ok(out)
    }
}

/// A run to go on with: its checkpoint, and whether a client may have seen part of an answer
/// the previous instance streamed (then `answer {status:"reset"}` follows `resumed`).
#[derive(Clone, Debug, PartialEq)]
pub struct Resume {
    pub checkpoint: Checkpoint,
    pub reset_answer: bool,
}

#[cfg(test)]
mod tests;
