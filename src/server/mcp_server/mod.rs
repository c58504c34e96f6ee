//! `POST|GET|DELETE /mcp` (docs/protocols.md): the agents visible to the caller as the tools of
//! an MCP server over streamable HTTP. A codec over runs: `tools/call` starts a run through
//! the session layer and follows its events; nothing here runs an agent. Hand-written
//! JSON-RPC rather than rmcp's server so that `/mcp` shares the router's key layer, tenancy
//! and error shapes, and keeps no session state that would pin a client to one instance.
//! Files: `rpc` (the envelope), `call` (`tools/call`), `names` (the agents' tool names),
//! `origin` (the `Origin` check).

mod call;
mod names;
mod origin;
mod rpc;

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::{from_fn, from_fn_with_state};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Extension, Router};
use dashmap::DashMap;
use serde_json::{json, Value};
use uuid::Uuid;

use super::auth;
use super::event_body::event_stream;
use super::state::AppState;
use super::Owner;
use crate::config::AgentSpec;
use crate::runs::LiveRun;
use call::{CallArgs, InFlight, McpCall};

/// Protocol versions of the initialize handshake, newest first.
pub const PROTOCOL_VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

const SESSION_HEADER: &str = "mcp-session-id";
const VERSION_HEADER: &str = "mcp-protocol-version";

/// Calls in flight by (tenant, session, request id), for `notifications/cancelled`.
pub type Calls = DashMap<(String, String, String), Arc<LiveRun>>;

/// The `/mcp` route: the origin check outermost, then the key.
pub fn routes(state: &AppState) -> Router<AppState> {
    let calls: Arc<Calls> = Arc::new(DashMap::new());
    let origins: Arc<[String]> = state.config.server.cors_origins.clone().into();
    Router::new()
        .route("/mcp", post(handle).get(no_stream).delete(end_session))
        .layer(Extension(calls))
        .route_layer(from_fn_with_state(state.auth.clone(), auth::require_key))
        .route_layer(from_fn(move |request, next| {
            origin::check(origins.clone(), request, next)
        }))
}

/// No server-initiated stream: everything a call sends comes in its own response.
async fn no_stream() -> Response {
    (
        StatusCode::METHOD_NOT_ALLOWED,
        [(header::ALLOW, "POST, DELETE")],
    )
        .into_response()
}

/// A session holds nothing here to end.
async fn end_session() -> StatusCode {
    StatusCode::NO_CONTENT
}

fn session_of(headers: &HeaderMap) -> String {
    headers
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string()
}

async fn handle(
    State(state): State<AppState>,
    Extension(owner): Extension<Owner>,
    Extension(calls): Extension<Arc<Calls>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if let Some(v) = headers.get(VERSION_HEADER) {
        if !PROTOCOL_VERSIONS.iter().any(|p| v == p) {
            let message = format!("unsupported {VERSION_HEADER}: {v:?}");
            return rpc::error_response(Value::Null, rpc::INVALID_REQUEST, &message);
        }
    }
    let message = match rpc::Message::parse(&body) {
        Ok(m) => m,
        Err(e) => return rpc::error_response(e.id, e.code, &e.message),
    };
    let session = session_of(&headers);
    let (id, method, params) = match message {
        rpc::Message::Notification { method, params } => {
            if method == "notifications/cancelled" {
                cancel(&state, &owner.0, &calls, &session, &params).await;
            }
            return StatusCode::ACCEPTED.into_response();
        }
        rpc::Message::Request { id, method, params } => (id, method, params),
    };
    let result = match method.as_str() {
        "initialize" => return initialize(&id, &params),
        "ping" => json!({}),
        "tools/list" => match visible_agents(&state, &owner.0).await {
            Ok(agents) => json!({"tools": tools(&agents)}),
            Err(message) => return rpc::error_response(id, rpc::INTERNAL_ERROR, &message),
        },
        "tools/call" => {
            let streams = accepts_stream(&headers);
            return tool_call(state, owner, calls, session, id, params, streams).await;
        }
        other => {
            let message = format!("method not found: {other}");
            return rpc::error_response(id, rpc::METHOD_NOT_FOUND, &message);
        }
    };
    rpc::json_response(StatusCode::OK, &rpc::result(&id, result))
}

/// The handshake: the client's version when this server speaks it, else the newest; a
/// session id names the client's calls for cancellation (nothing is stored under it).
fn initialize(id: &Value, params: &Value) -> Response {
    let asked = params["protocolVersion"].as_str().unwrap_or_default();
    let version = PROTOCOL_VERSIONS
        .iter()
        .find(|v| **v == asked)
        .unwrap_or(&PROTOCOL_VERSIONS[0]);
    let result = json!({
        "protocolVersion": version,
        "capabilities": {"tools": {"listChanged": false}},
        "serverInfo": {"name": "reagent", "version": env!("CARGO_PKG_VERSION")},
        "instructions": "Each tool is a reagent agent: call it with a query; pass the conversation_id of a result to go on in that conversation.",
    });
    let mut response = rpc::json_response(StatusCode::OK, &rpc::result(id, result));
    if let Ok(session) = HeaderValue::from_str(&Uuid::new_v4().to_string()) {
        response.headers_mut().insert(SESSION_HEADER, session);
    }
    response
}

/// The agents `owner` may call: the configured ones and its own (the catalog's list).
async fn visible_agents(state: &AppState, owner: &str) -> Result<Vec<Arc<AgentSpec>>, String> {
    let listed = state.runs.catalog().list(owner).await;
    let agents = listed.map_err(|e| format!("the agent list could not be read: {e}"))?;
    Ok(agents.into_iter().map(|a| a.spec).collect())
}

/// One tool per agent.
fn tools(agents: &[Arc<AgentSpec>]) -> Vec<Value> {
    let output = json!({
        "type": "object",
        "properties": {
            "answer": {"type": "string"},
            "run_id": {"type": "string"},
            "conversation_id": {"type": "string"},
            "status": {"type": "string"}
        },
        "required": ["answer", "run_id", "conversation_id", "status"]
    });
    let names = names::tool_names(agents);
    agents
        .iter()
        .zip(names)
        .filter(|(_, name)| !name.is_empty())
        .map(|(agent, name)| {
            let description = agent
                .description
                .clone()
                .unwrap_or_else(|| format!("Ask the reagent agent `{}`.", agent.name));
            json!({
                "name": name,
                "description": description,
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "query": {"type": "string", "description": "What to ask the agent"},
                        "conversation_id": {"type": "string",
                            "description": "Go on in this conversation (a previous result's conversation_id)"}
                    },
                    "required": ["query"]
                },
                "outputSchema": output,
            })
        })
        .collect()
}

fn accepts_stream(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("text/event-stream"))
}

/// Starts the call's run and answers with its result: as an event stream (progress, then the
/// result) when the client takes one, else as one JSON body once the run ended.
async fn tool_call(
    state: AppState,
    owner: Owner,
    calls: Arc<Calls>,
    session: String,
    id: Value,
    params: Value,
    streams: bool,
) -> Response {
    let agents = match visible_agents(&state, &owner.0).await {
        Ok(agents) => agents,
        Err(message) => return rpc::error_response(id, rpc::INTERNAL_ERROR, &message),
    };
    let args = match CallArgs::parse(&agents, &params) {
        Ok(args) => args,
        Err(message) => return rpc::error_response(id, rpc::INVALID_PARAMS, &message),
    };
    let live = match call::start(&state, &owner.0, &args).await {
        Ok(live) => live,
        Err(result) => return rpc::json_response(StatusCode::OK, &rpc::result(&id, result)),
    };
    let key = (owner.0.clone(), session, id.to_string());
    calls.insert(key.clone(), live.clone());
    let call = McpCall {
        id,
        token: args.progress_token,
        steps: 0,
        flight: InFlight {
            calls,
            key,
            live: live.clone(),
            armed: true,
        },
        response: None,
    };
    if streams {
        let events = state.runs.live_events(&live, 0);
        let subscriber = state.metrics.sse_subscriber();
        return event_stream(String::new(), events, call, state.keep_alive, subscriber);
    }
    let response = call::follow(&state, call).await;
    rpc::json_response(StatusCode::OK, &response)
}

/// `notifications/cancelled`: stops the named call's run and waits for its end.
async fn cancel(state: &AppState, owner: &str, calls: &Calls, session: &str, params: &Value) {
    let key = (
        owner.to_string(),
        session.to_string(),
        params["requestId"].to_string(),
    );
    let Some(live) = calls.get(&key).map(|l| l.clone()) else {
        return;
    };
    if let Err(e) = state.runs.stop_and_wait(owner, live.id).await {
        tracing::warn!(run_id = %live.id, error = %e, "an MCP cancellation did not stop its run");
    }
}
