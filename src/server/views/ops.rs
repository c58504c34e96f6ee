//! The views of the catalog and of operations: tools, models, instances, health and readiness.

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::llm;
use crate::tools::ToolSource;

/// A tool of the catalog (docs/api.md).
#[derive(Debug, Serialize, ToSchema)]
pub struct Tool {
    pub name: String,
    pub description: String,
    /// The JSON Schema of its arguments.
    pub parameters: Value,
    pub source: ToolSource,
    /// The MCP server of an MCP tool (docs/protocols.md); absent for other tools.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = String)]
    pub server: Option<String>,
}

/// What a model can do beyond plain text.
#[derive(Debug, Serialize, ToSchema)]
pub struct Abilities {
    pub tool_call: bool,
    pub json_mode: bool,
    pub json_schema: bool,
    pub tool_choice: bool,
    pub vision: bool,
}

/// A model of the catalog (docs/api.md): no URL, no key.
#[derive(Debug, Serialize, ToSchema)]
pub struct Model {
    /// The name clients pass as `model`.
    pub name: String,
    /// The provider's model name.
    pub model: String,
    pub abilities: Abilities,
    pub context_window: u32,
    pub max_output_tokens: u32,
    pub hints: Vec<String>,
    pub default: bool,
    /// No API key is configured although the provider is not on this machine.
    pub needs_key: bool,
    /// The scripted demo model of `reagent serve --demo`: answers come from a script, not an
    /// LLM (the UI shows a banner).
    pub demo: bool,
}

impl From<llm::registry::ModelInfo> for Model {
    fn from(m: llm::registry::ModelInfo) -> Self {
        Self {
            name: m.name,
            model: m.model,
            abilities: Abilities {
                tool_call: m.abilities.tool_call,
                json_mode: m.abilities.json_mode,
                json_schema: m.abilities.json_schema,
                tool_choice: m.abilities.tool_choice,
                vision: m.abilities.vision,
            },
            context_window: m.context_window,
            max_output_tokens: m.max_output_tokens,
            hints: m.hints,
            default: m.default,
            needs_key: m.needs_key,
            demo: m.demo,
        }
    }
}

/// One entry of `GET /api/instances` (docs/deployment.md).
#[derive(Debug, Serialize, ToSchema)]
pub struct Instance {
    /// `REAGENT_INSTANCE_ID`.
    pub id: String,
    /// When the instance started.
    pub started_at: DateTime<Utc>,
    /// Its last heartbeat, by the database's clock.
    pub last_seen: DateTime<Utc>,
    /// Running runs whose lease it holds.
    pub runs_owned: i64,
}

impl From<crate::store::InstanceRow> for Instance {
    fn from(r: crate::store::InstanceRow) -> Self {
        Self {
            id: r.id,
            started_at: r.started_at,
            last_seen: r.last_seen,
            runs_owned: r.runs_owned,
        }
    }
}

/// `GET /healthz`.
#[derive(Debug, Serialize, ToSchema)]
pub struct Health {
    /// Always `ok`.
    pub status: String,
}

/// `GET /readyz`.
#[derive(Debug, Serialize, ToSchema)]
pub struct Ready {
    /// Always `ready`.
    pub status: String,
    /// `sqlite` or `postgres`.
    pub database: String,
}
