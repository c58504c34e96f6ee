//! [`StepRecord`]: one tool call as it happened. Its own module because both the run's result
//! ([`super::run`]) and the checkpoints ([`super::checkpoint`]) hold these records, and the run's
//! handles hold the checkpoint sink: kept in either, the two would import each other.

use serde_json::Value;

/// One tool call as it happened; the synthesis trace is built from these.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StepRecord {
    pub iteration: u32,
    pub call_id: String,
    pub tool: String,
    pub arguments: Value,
    /// The observation the LLM saw, in full.
    pub observation: String,
    pub error: bool,
    pub blocked: bool,
    pub duration_ms: u64,
}
