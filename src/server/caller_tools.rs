//! Caller tools on `/api` (docs/api.md "Caller tools"): the `client_tools` a run start may
//! declare, and the body of `POST /api/runs/{run_id}/tool_outputs` (`server::runs`), which
//! answers a `requires_action` run's calls.

use serde::Deserialize;
use serde_json::Value;
use utoipa::ToSchema;

use super::error::ApiError;
use crate::agent::caller_tools::ToolOutput;
use crate::llm::ToolDefinition;

/// A tool the caller executes, in OpenAI's function-tool shape.
#[derive(Clone, Debug, Deserialize, ToSchema)]
pub struct CallerTool {
    /// Only `function`.
    #[serde(rename = "type")]
    #[schema(pattern = "^function$")]
    pub kind: String,
    pub function: CallerFunction,
}

#[derive(Clone, Debug, Deserialize, ToSchema)]
pub struct CallerFunction {
    /// Letters, digits, `_` or `-` (at most 64); none of the run's own tools' names.
    #[schema(pattern = "^[A-Za-z0-9_-]{1,64}$")]
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// JSON Schema of the arguments object; `{"type":"object"}` when absent.
    #[schema(value_type = Option<Object>)]
    pub parameters: Option<Value>,
}

/// The definitions the model sees; `type` other than `function` is 400.
pub fn definitions(tools: Vec<CallerTool>) -> Result<Vec<ToolDefinition>, ApiError> {
    tools
        .into_iter()
        .map(|t| {
            if t.kind != "function" {
                return Err(ApiError::invalid(format!(
                    "client_tools: type '{}' is not supported (only 'function')",
                    t.kind
                )));
            }
            Ok(ToolDefinition {
                name: t.function.name,
                description: t.function.description,
                parameters: t
                    .function
                    .parameters
                    .unwrap_or_else(|| serde_json::json!({"type": "object", "properties": {}})),
            })
        })
        .collect()
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolOutputsBody {
    /// One output for each call of `done.required_action.tool_calls`.
    pub outputs: Vec<ToolOutputBody>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolOutputBody {
    pub call_id: String,
    /// What the tool returned, as the model reads it.
    pub output: String,
}

impl ToolOutputsBody {
    pub fn into_outputs(self) -> Vec<ToolOutput> {
        self.outputs
            .into_iter()
            .map(|o| ToolOutput {
                call_id: o.call_id,
                output: o.output,
            })
            .collect()
    }
}
