//! `[react]`: the engine's knobs with their defaults.

use serde::Deserialize;

use crate::domain::prompt_budget;

/// `[react]`: the engine's knobs.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ReactConfig {
    /// `REACT_MAX_ITERATIONS`, at least 1.
    pub max_iterations: u32,
    /// `REACT_TOOL_SELECTION_THRESHOLD`: select when more tools than this.
    pub tool_selection_threshold: u32,
    /// `REACT_TOOL_SELECTION_MAX`, at least 1.
    pub tool_selection_max: u32,
    /// `REACT_SELF_REFLECTION_INTERVAL`; 0 disables reflection.
    pub self_reflection_interval: u32,
    /// `REACT_CYCLE_DETECTION_THRESHOLD`, at least 1.
    pub cycle_detection_threshold: u32,
    /// The completion checklist on/off.
    pub completion_check: bool,
    /// `REACT_COMPLETION_CHECK_MIN_TOOLS`.
    pub completion_check_min_tools: u32,
    /// `REACT_SYNTHESIS_TRUNCATION`, characters per tool result, at least 1.
    pub synthesis_truncation: usize,
    /// `CONTEXT_BUDGET_TOKENS`; absent means window − max output of the run's model.
    pub context_budget_tokens: Option<u32>,
    /// Per tool call timeout.
    pub tool_timeout_s: u64,
    /// A separate model (by name) for context compaction.
    pub compact_model: Option<String>,
    /// Allow native function calling when the model can.
    pub use_native_tools: bool,
    /// `REACT_MAX_TOOL_CALLS_PER_REPLY`, at least 1: the calls of one model reply that run; the
    /// rest are dropped from the reply and the model is told so.
    pub max_tool_calls_per_reply: u32,
    /// `REACT_MAX_TOOL_CALLS_PER_RUN`, at least 1: tool calls one run's loop (one DAG step's)
    /// makes in all; then it stops calling tools and the answer is written from what it has.
    pub max_tool_calls_per_run: u32,
    /// `REACT_MAX_TOOL_ARGUMENTS_BYTES`, at least 1: the largest arguments one tool call may
    /// send; a larger call is not run (its arguments are not kept) and the model is told why.
    pub max_tool_arguments_bytes: usize,
    /// `REACT_SYNTHESIS_MAX_BYTES`, at least 1024: the synthesis trace's size; steps in the
    /// middle are elided past it (never more than the model's prompt budget either).
    pub synthesis_max_bytes: usize,
}

impl Default for ReactConfig {
    fn default() -> Self {
        Self {
            max_iterations: 50,
            tool_selection_threshold: 12,
            tool_selection_max: 6,
            self_reflection_interval: 6,
            cycle_detection_threshold: 3,
            completion_check: true,
            completion_check_min_tools: 3,
            synthesis_truncation: 2000,
            context_budget_tokens: None,
            tool_timeout_s: 60,
            compact_model: None,
            use_native_tools: true,
            max_tool_calls_per_reply: 32,
            max_tool_calls_per_run: 200,
            max_tool_arguments_bytes: 1024 * 1024,
            synthesis_max_bytes: 256 * 1024,
        }
    }
}

impl ReactConfig {
    /// The context budget for a run on a model with these limits.
    pub fn context_budget_for(&self, context_window: u32, max_output_tokens: u32) -> u32 {
        self.context_budget_tokens
            .unwrap_or_else(|| prompt_budget(context_window, max_output_tokens))
    }
}
