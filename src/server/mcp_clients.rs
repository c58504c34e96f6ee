//! The status of the MCP servers reagent is a client of (not an MCP server of its own).
//! `GET /api/mcp` (docs/protocols.md): each MCP server's name, transport, state, tools, the
//! listed tools it skipped with the reason, last error and since when it is in that state.
//! Never env, headers or anything else that may hold a
//! secret. Its OpenAPI entry is added by [`add_openapi`], kept here so the document's own
//! generator need not know this route.

use axum::extract::State;
use axum::Json;
use serde_json::{json, Value};

use super::state::AppState;
use crate::tools::mcp::ServerStatus;

pub async fn list(State(state): State<AppState>) -> Json<Vec<ServerStatus>> {
    Json(state.mcp.status())
}

/// Adds `GET /api/mcp` to an OpenAPI document.
pub fn add_openapi(doc: &mut Value) {
    let schema = json!({
        "type": "array",
        "items": {
            "type": "object",
            "required": ["name", "transport", "state", "tools", "skipped_tools", "last_error", "since", "required"],
            "properties": {
                "name": {"type": "string"},
                "transport": {"type": "string", "enum": ["stdio", "http"]},
                "state": {"type": "string", "enum": ["connecting", "ready", "failed", "restarting"]},
                "tools": {"type": "array", "items": {"type": "string"}},
                "skipped_tools": {"type": "array", "items": {
                    "type": "object", "required": ["tool", "reason"],
                    "properties": {"tool": {"type": "string"}, "reason": {"type": "string"}}}},
                "last_error": {"type": ["string", "null"]},
                "since": {"type": "string", "format": "date-time"},
                "required": {"type": "boolean"}
            }
        }
    });
    let op = json!({
        "get": {
            "tags": ["catalog"],
            "operationId": "mcp_servers",
            "summary": "MCP tool servers and their state",
            "responses": {
                "200": {"description": "Every configured MCP server",
                        "content": {"application/json": {"schema": schema}}}
            }
        }
    });
    if let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) {
        paths.insert("/api/mcp".into(), op);
    }
}
