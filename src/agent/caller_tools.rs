//! Caller tools (docs/api.md "Caller tools"): tools a run's caller declares and executes itself.
//! The loop offers them to the model beside the run's own tools; when a response calls one, the
//! run's own calls from that response run, the checkpoint records the calls left for the caller
//! ([`CallerCall`]) and the run ends `requires_action`. A continuation goes on from that
//! checkpoint with the caller's outputs appended as tool results
//! ([`Checkpoint::answer_pending`](super::checkpoint::Checkpoint::answer_pending)); nothing waits
//! in memory meanwhile.

use serde::{Deserialize, Serialize};

use crate::llm::ToolDefinition;

/// What a pending call gets when the user sends a new message instead of its output.
pub const NOT_ANSWERED: &str = "[not answered: the user sent a new message]";

/// One call of a caller tool the model made, waiting for the caller's output.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallerCall {
    pub call_id: String,
    pub name: String,
    /// The arguments as the model wrote them (a JSON object's text).
    pub arguments: String,
}

/// `done.required_action` of a run that waits for its caller.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequiredAction {
    pub tool_calls: Vec<CallerCall>,
}

/// The caller's output for one pending call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolOutput {
    pub call_id: String,
    pub output: String,
}

/// Why outputs do not answer a paused run's calls (each a 400 naming the call).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OutputsError {
    #[error("no output for the pending call '{0}'")]
    Missing(String),
    #[error("'{0}' is not a pending call of this run")]
    Unknown(String),
    #[error("two outputs for the call '{0}'")]
    Twice(String),
}

/// Whether `name` is one of the caller tools `defs`.
pub fn is_caller_tool(defs: &[ToolDefinition], name: &str) -> bool {
    defs.iter().any(|d| d.name == name)
}

/// Orders `outputs` as the checkpoint's pending calls, checking each call is answered once.
pub fn match_outputs(
    pending: &[CallerCall],
    outputs: &[ToolOutput],
) -> Result<Vec<String>, OutputsError> {
    for (i, o) in outputs.iter().enumerate() {
        if !pending.iter().any(|c| c.call_id == o.call_id) {
            return Err(OutputsError::Unknown(o.call_id.clone()));
        }
        if outputs[..i].iter().any(|p| p.call_id == o.call_id) {
            return Err(OutputsError::Twice(o.call_id.clone()));
        }
    }
    pending
        .iter()
        .map(|c| {
            outputs
                .iter()
                .find(|o| o.call_id == c.call_id)
                .map(|o| o.output.clone())
                .ok_or_else(|| OutputsError::Missing(c.call_id.clone()))
        })
        .collect()
}

#[cfg(test)]
mod tests;
