//! [`DagSetup`]: what a DAG run is built from. Its own module because the engine, the executor
//! and one step's agent all read it: kept in the engine it made them import each other.

use std::sync::Arc;

use crate::agent::hooks::HookRunner;
use crate::agent::{AgentConfig, Mode};
use crate::config::DagConfig;
use crate::llm::registry::ModelRegistry;
use crate::llm::Llm;
use crate::tools::ToolRegistry;

/// What a DAG run is built from: the run's model (planner, analyser, answer, and steps without
/// a matching role), the registry that serves roles, and what every step's agent gets.
pub struct DagSetup {
    pub llm: Arc<dyn Llm>,
    /// The run's model's registry name (`start.model`).
    pub model_name: String,
    pub models: ModelRegistry,
    pub tools: ToolRegistry,
    pub hooks: HookRunner,
    /// The steps' ReAct settings (`max_iterations` is replaced by `DAG_STEP_MAX_ITERATIONS`).
    pub react: AgentConfig,
    pub dag: DagConfig,
    pub mode: Option<Mode>,
    pub system_prompt: Option<String>,
    pub compact_llm: Option<Arc<dyn Llm>>,
}

impl DagSetup {
    /// The mode the run's model works in (`start.mode`); steps on other models may differ.
    pub fn mode(&self) -> Mode {
        let native = self.react.use_native_tools && self.llm.abilities().tool_call;
        if self.mode == Some(Mode::Json) || !native {
            Mode::Json
        } else {
            Mode::Native
        }
    }
}
