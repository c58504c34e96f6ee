//! The payload types of the DAG events that `step` events carry: a plan's steps as
//! clients see them and a step's status.

use serde::{Deserialize, Serialize};

/// One step of a plan, as the `plan` event shows it (`model` is the registry name chosen for
/// it when the plan was made; the step keeps it when it runs).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlanStepView {
    pub id: String,
    pub task: String,
    pub dependencies: Vec<String>,
    pub tool_hint: Option<String>,
    pub model_hint: Option<String>,
    pub model: String,
}

/// A DAG step's life: `queued` until a concurrency slot is free, `running`, then one of the
/// final three.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DagStatus {
    Queued,
    Running,
    Completed,
    Failed,
    Skipped,
}

impl DagStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Queued => "queued",
            Self::Running => "running",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Skipped => "skipped",
        }
    }

    /// Completed, failed or skipped.
    pub fn is_final(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Skipped)
    }
}
