//! `GET /api/agents` (docs/protocols.md): the configured agents, as a UI offers them when a conversation
//! is started and as `/v1/models` lists them. System prompts stay on the server.

use axum::extract::State;
use axum::Json;
use serde::Serialize;

use super::state::AppState;
use crate::config::AgentSpec;
use crate::domain::Engine;

/// One agent as clients see it.
#[derive(Debug, Serialize)]
pub struct AgentInfo {
    pub name: String,
    pub description: Option<String>,
    /// The model its runs use (the default model when the agent names none).
    pub model: String,
    /// Tool-name globs; `null` means every tool.
    pub tools: Option<Vec<String>>,
    /// `null`: the server's default engine.
    pub engine: Option<Engine>,
    /// `null`: the server's default.
    pub max_iterations: Option<u32>,
    pub has_system_prompt: bool,
}

impl AgentInfo {
    pub fn of(agent: &AgentSpec, default_model: &str) -> Self {
        Self {
            name: agent.name.clone(),
            description: agent.description.clone(),
            model: agent
                .model
                .clone()
                .unwrap_or_else(|| default_model.to_string()),
            tools: agent.tools.clone(),
            engine: agent.engine,
            max_iterations: agent.max_iterations,
            has_system_prompt: agent.system_prompt.is_some(),
        }
    }
}

pub async fn list(State(state): State<AppState>) -> Json<Vec<AgentInfo>> {
    let default = state.models.default_name();
    Json(
        state
            .runs
            .agents
            .iter()
            .map(|a| AgentInfo::of(a, default))
            .collect(),
    )
}
