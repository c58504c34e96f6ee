//! [`AgentConfig`]: the engine's settings for one agent.

use std::time::Duration;

use super::events::Mode;

/// Per-agent settings; defaults are the SPEC §6 defaults.
#[derive(Clone, Debug)]
pub struct AgentConfig {
    pub max_iterations: u32,
    pub tool_selection_threshold: usize,
    pub tool_selection_max: usize,
    /// 0 disables self-reflection.
    pub self_reflection_interval: u32,
    /// 0 disables cycle detection.
    pub cycle_detection_threshold: u32,
    pub completion_check: bool,
    pub completion_check_min_tools: u32,
    pub synthesis_truncation: usize,
    /// `None`: the model's context window minus its max output tokens.
    pub context_budget_tokens: Option<usize>,
    /// Native function calling when the model supports it (SPEC §2.2).
    pub use_native_tools: bool,
    /// A mode asked for explicitly; native falls back to JSON when the model cannot do it.
    pub mode: Option<Mode>,
    /// Default per-tool timeout (a tool may set its own).
    pub tool_timeout: Duration,
    /// The role part of the system prompt.
    pub system_prompt: Option<String>,
}

impl Default for AgentConfig {
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
            use_native_tools: true,
            mode: None,
            tool_timeout: Duration::from_secs(60),
            system_prompt: None,
        }
    }
}
