//! `/api/agents` (docs/api.md "Agents"): the agents a tenant can run — the configured ones
//! (read-only, `source: "config"`) and its own, made, versioned and deleted here
//! (`source: "api"`). A configured agent's system prompt stays on the server.

use axum::extract::State;
use axum::http::StatusCode;
use axum::{Extension, Json};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::auth::Owner;
use super::error::{ApiError, ApiJson, ApiPath};
use super::runs::whole_number;
use super::state::AppState;
use super::views::ErrorBody;
use crate::config::AgentEntry;
use crate::domain::{Engine, SynthesisPolicy};
use crate::runs::{AgentSource, CatalogAgent};

/// One agent as clients see it.
#[derive(Debug, Serialize, ToSchema)]
pub struct AgentInfo {
    pub name: String,
    pub description: Option<String>,
    /// The model its runs use (the default model when the agent names none).
    pub model: String,
    /// Tool-name globs; `null` means every tool.
    pub tools: Option<Vec<String>>,
    /// `null`: the server's default engine.
    #[schema(value_type = Option<String>)]
    pub engine: Option<Engine>,
    /// `null`: the server's default.
    pub max_iterations: Option<u32>,
    pub has_system_prompt: bool,
    /// `config` (read-only) or `api`.
    #[schema(value_type = String)]
    pub source: AgentSource,
    /// An API agent's version; `null` for a configured agent.
    pub version: Option<u32>,
    /// When this version was made (API agents).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created_at: Option<DateTime<Utc>>,
    /// An API agent's own system prompt (its tenant wrote it); never a configured one's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub synthesis: Option<SynthesisPolicy>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completion_check: Option<bool>,
}

impl AgentInfo {
    pub fn of(agent: &CatalogAgent, default_model: &str) -> Self {
        let a = &agent.spec;
        let api = agent.source == AgentSource::Api;
        Self {
            name: a.name.clone(),
            description: a.description.clone(),
            model: a.model.clone().unwrap_or_else(|| default_model.to_string()),
            tools: a.tools.clone(),
            engine: a.engine,
            max_iterations: a.max_iterations,
            has_system_prompt: a.system_prompt.is_some(),
            source: agent.source,
            version: agent.version,
            created_at: agent.created_at,
            system_prompt: a.system_prompt.clone().filter(|_| api),
            temperature: a.sampling.temperature,
            top_p: a.sampling.top_p,
            seed: a.sampling.seed,
            synthesis: a.synthesis,
            completion_check: a.completion_check,
        }
    }
}

/// An agent's fields, as `[[agents]]` takes them (docs/configuration.md).
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentBody {
    /// 1 to 64 letters, digits, `_`, `-`, `.` or `:`; required by POST, the path's on PUT.
    pub name: Option<String>,
    pub description: Option<String>,
    /// A configured model (`GET /api/models`); the default model when absent.
    pub model: Option<String>,
    pub system_prompt: Option<String>,
    /// Tool names or globs (`GET /api/tools`); every tool when absent.
    pub tools: Option<Vec<String>>,
    /// `react`, `dag` or `auto`.
    pub engine: Option<String>,
    #[schema(minimum = 1)]
    #[serde(default, deserialize_with = "whole_number")]
    pub max_iterations: Option<u32>,
    pub temperature: Option<f32>,
    pub top_p: Option<f32>,
    #[serde(default, deserialize_with = "whole_number")]
    pub seed: Option<u64>,
    /// `auto`, `always` or `never`.
    #[schema(value_type = Option<String>)]
    pub synthesis: Option<SynthesisPolicy>,
    pub completion_check: Option<bool>,
}

impl AgentBody {
    fn into_entry(self, name: String) -> AgentEntry {
        AgentEntry {
            name,
            model: self.model,
            system_prompt: self.system_prompt,
            tools: self.tools,
            engine: self.engine,
            max_iterations: self.max_iterations,
            description: self.description,
            temperature: self.temperature,
            top_p: self.top_p,
            seed: self.seed,
            synthesis: self.synthesis,
            completion_check: self.completion_check,
        }
    }
}

fn info(state: &AppState, agent: &CatalogAgent) -> AgentInfo {
    AgentInfo::of(agent, state.models.default_name())
}

#[utoipa::path(get, path = "/api/agents", tag = "agents", operation_id = "agents",
    summary = "The configured agents and the caller's own",
    responses((status = 200, description = "Configured agents first, then the caller's by name", body = [AgentInfo])))]
pub async fn list(
    State(state): State<AppState>,
    Extension(owner): Extension<Owner>,
) -> Result<Json<Vec<AgentInfo>>, ApiError> {
    let agents = state.runs.catalog().list(&owner.0).await?;
    Ok(Json(agents.iter().map(|a| info(&state, a)).collect()))
}

#[utoipa::path(post, path = "/api/agents", tag = "agents", operation_id = "create_agent", request_body = AgentBody,
    summary = "Make an agent (version 1)",
    responses((status = 201, description = "The agent, `version: 1, source: \"api\"`", body = AgentInfo),
              (status = 400, description = "`invalid_request`: a bad field, an unknown model or tool (the nearest names given)", body = ErrorBody),
              (status = 409, description = "`conflict`: a configured agent's name, or an agent of that name exists", body = ErrorBody)))]
pub async fn create(
    State(state): State<AppState>,
    Extension(owner): Extension<Owner>,
    ApiJson(body): ApiJson<AgentBody>,
) -> Result<(StatusCode, Json<AgentInfo>), ApiError> {
    let Some(name) = body.name.clone() else {
        return Err(ApiError::invalid("name is required"));
    };
    let agent = state
        .runs
        .create_agent(&owner.0, body.into_entry(name))
        .await?;
    Ok((StatusCode::CREATED, Json(info(&state, &agent))))
}

#[utoipa::path(get, path = "/api/agents/{name}", tag = "agents", operation_id = "show_agent",
    params(("name" = String, Path, description = "Agent name")),
    summary = "An agent (an API agent's latest version)",
    responses((status = 200, description = "The agent", body = AgentInfo)))]
pub async fn show(
    State(state): State<AppState>,
    Extension(owner): Extension<Owner>,
    ApiPath(name): ApiPath<String>,
) -> Result<Json<AgentInfo>, ApiError> {
    let agent = state.runs.catalog().get(&owner.0, &name, None).await?;
    let agent = agent.ok_or(ApiError::NotFound)?;
    Ok(Json(info(&state, &agent)))
}

#[utoipa::path(put, path = "/api/agents/{name}", tag = "agents", operation_id = "update_agent", request_body = AgentBody,
    params(("name" = String, Path, description = "Agent name")),
    summary = "Make the agent's next version (the whole agent; earlier versions stay)",
    responses((status = 200, description = "The new version", body = AgentInfo),
              (status = 409, description = "`conflict`: a configured agent (read-only)", body = ErrorBody)))]
pub async fn update(
    State(state): State<AppState>,
    Extension(owner): Extension<Owner>,
    ApiPath(name): ApiPath<String>,
    ApiJson(body): ApiJson<AgentBody>,
) -> Result<Json<AgentInfo>, ApiError> {
    let given = body.name.clone().unwrap_or_else(|| name.clone());
    let agent = state
        .runs
        .update_agent(&owner.0, &name, body.into_entry(given))
        .await?;
    Ok(Json(info(&state, &agent)))
}

#[utoipa::path(delete, path = "/api/agents/{name}", tag = "agents", operation_id = "delete_agent",
    params(("name" = String, Path, description = "Agent name")),
    summary = "Delete an agent (its conversations keep running on their versions)",
    responses((status = 204, description = "Deleted"),
              (status = 409, description = "`conflict`: a configured agent (read-only)", body = ErrorBody)))]
pub async fn remove(
    State(state): State<AppState>,
    Extension(owner): Extension<Owner>,
    ApiPath(name): ApiPath<String>,
) -> Result<StatusCode, ApiError> {
    state.runs.delete_agent(&owner.0, &name).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(get, path = "/api/agents/{name}/versions", tag = "agents", operation_id = "agent_versions",
    params(("name" = String, Path, description = "Agent name")),
    summary = "Every version of an API agent, oldest first",
    responses((status = 200, description = "The versions", body = [AgentInfo]),
              (status = 409, description = "`conflict`: a configured agent has no versions", body = ErrorBody)))]
pub async fn versions(
    State(state): State<AppState>,
    Extension(owner): Extension<Owner>,
    ApiPath(name): ApiPath<String>,
) -> Result<Json<Vec<AgentInfo>>, ApiError> {
    let all = state.runs.catalog().versions(&owner.0, &name).await?;
    Ok(Json(all.iter().map(|a| info(&state, a)).collect()))
}

#[utoipa::path(get, path = "/api/agents/{name}/versions/{version}", tag = "agents", operation_id = "agent_version",
    params(("name" = String, Path, description = "Agent name"),
           ("version" = u32, Path, description = "Version number, from 1")),
    summary = "One version of an API agent",
    responses((status = 200, description = "The version", body = AgentInfo),
              (status = 409, description = "`conflict`: a configured agent has no versions", body = ErrorBody)))]
pub async fn version(
    State(state): State<AppState>,
    Extension(owner): Extension<Owner>,
    ApiPath((name, version)): ApiPath<(String, u32)>,
) -> Result<Json<AgentInfo>, ApiError> {
    state.runs.catalog().writable(&name)?;
    let agent = state
        .runs
        .catalog()
        .get(&owner.0, &name, Some(version))
        .await?;
    let agent = agent.ok_or(ApiError::NotFound)?;
    Ok(Json(info(&state, &agent)))
}
