//! The agent card (`GET /a2a/{agent}/.well-known/agent-card.json`, and
//! `GET /.well-known/agent-card.json` for the default agent): A2A 1.0's fields with the 0.3
//! ones beside them (`url`, `preferredTransport`, `protocolVersion`, `security`), as the
//! official SDK's servers write it, so clients of either version find the JSON-RPC endpoint.
//! Both interfaces are the same URL: the method names tell the versions apart. Cards are public
//! (discovery needs no key); a tenant's own agents are shown only to a caller with its key.

use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

use crate::config::AgentSpec;
use crate::server::state::AppState;

/// The card of agent `agent`, or 404.
pub async fn agent(
    State(state): State<AppState>,
    Path(agent): Path<String>,
    headers: HeaderMap,
) -> Response {
    card_response(&state, &agent, &headers).await
}

/// The card of the default agent: the first configured one.
pub async fn default(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let Some(first) = state.config.agents.first().map(|a| a.name.clone()) else {
        return not_found();
    };
    card_response(&state, &first, &headers).await
}

async fn card_response(state: &AppState, agent: &str, headers: &HeaderMap) -> Response {
    // A caller without a valid key sees the configured agents only.
    let owner = state.auth.authenticate(headers).ok();
    let spec = match owner {
        Some(owner) => match state.runs.catalog().get(&owner.0, agent, None).await {
            Ok(found) => found.map(|a| a.spec),
            Err(e) => {
                tracing::warn!(error = %e, "an agent card could not be read");
                return StatusCode::SERVICE_UNAVAILABLE.into_response();
            }
        },
        None => state.runs.catalog().configured(agent).cloned(),
    };
    let Some(spec) = spec else {
        return not_found();
    };
    let url = format!("{}/a2a/{}", origin(headers), spec.name);
    let body = card(&spec, &url, state.auth.enabled());
    (
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

fn not_found() -> Response {
    let body = json!({"error": {"code": "not_found", "message": "no such agent"}});
    (
        StatusCode::NOT_FOUND,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// `scheme://host` as the client reached this server (a proxy's `X-Forwarded-Proto` and
/// `X-Forwarded-Host` first).
fn origin(headers: &HeaderMap) -> String {
    let read = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(',').next())
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    let scheme = read("x-forwarded-proto").unwrap_or_else(|| "http".into());
    let host = read("x-forwarded-host")
        .or_else(|| read("host"))
        .unwrap_or_else(|| "localhost".into());
    format!("{scheme}://{host}")
}

/// The card of `spec` served at `url`; `bearer` when API keys are configured.
pub fn card(spec: &AgentSpec, url: &str, bearer: bool) -> Value {
    let description = spec
        .description
        .clone()
        .unwrap_or_else(|| format!("The reagent agent `{}`.", spec.name));
    let mut card = json!({
        "name": spec.name,
        "description": description,
        "version": env!("CARGO_PKG_VERSION"),
        "supportedInterfaces": [
            {"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
        ],
        "capabilities": {"streaming": true, "pushNotifications": false,
                         "extendedAgentCard": false},
        "defaultInputModes": ["text/plain", "application/json", "image/*"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{
            "id": spec.name,
            "name": spec.name,
            "description": description,
            "tags": ["reagent", "agent"],
            "examples": [],
        }],
        // A2A 0.3's fields, for its clients.
        "protocolVersion": "0.3.0",
        "url": url,
        "preferredTransport": "JSONRPC",
    });
    if bearer {
        card["securitySchemes"] = json!({"bearer": {
            "httpAuthSecurityScheme": {"scheme": "Bearer", "description": "A reagent API key"},
            "type": "http", "scheme": "bearer", "description": "A reagent API key",
        }});
        card["securityRequirements"] = json!([{"schemes": {"bearer": {"list": []}}}]);
        card["security"] = json!([{"bearer": []}]);
    }
    card
}
