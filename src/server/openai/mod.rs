//! The OpenAI-compatible API (docs/protocols.md): agents as models. `GET /v1/models` lists the
//! caller's agents, `POST /v1/chat/completions` runs one — through the same [`crate::runs::RunManager`] calls as
//! `/api`, so the run is stored, visible under `/api` and in the UI, and nothing in `runs`
//! knows which API started it. Files: `wire` (the request, leniently read), `completions` (the
//! handler and the non-streamed answer), `stream` (the `chat.completion.chunk` stream), `error`
//! (OpenAI's error shape), `openapi` (these routes in the OpenAPI document).
//!
//! Same keys, tenancy and rate limit as `/api` (docs/api.md), answered in OpenAI's error shape so
//! the SDKs raise their typed exceptions (`AuthenticationError`, `RateLimitError`…).

mod completions;
mod error;
pub mod openapi;
mod reply;
mod responses;
mod stream;
mod wire;

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use axum::extract::{Request, State};
use axum::middleware::{from_fn_with_state, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use serde_json::{json, Value};

pub use error::OpenAiError;

use super::state::AppState;
use super::{ApiError, Owner};
use crate::config::AgentSpec;

/// The `/v1` routes (nested under `/v1` by the router).
pub fn routes(state: &AppState) -> Router<AppState> {
    let with_images = super::images::body_limit(&state.config.server);
    Router::new()
        .route("/models", get(models))
        .route(
            "/chat/completions",
            post(completions::create).layer(with_images),
        )
        .route("/responses", post(responses::create).layer(with_images))
        .route(
            "/responses/{id}",
            get(responses::retrieve).delete(responses::delete),
        )
        .route("/responses/{id}/cancel", post(responses::cancel))
        .route("/responses/{id}/input_items", get(responses::input_items))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .route_layer(from_fn_with_state(state.clone(), require_key))
}

/// Like `/api`'s key check and rate limit, answering in OpenAI's shape.
async fn require_key(State(state): State<AppState>, mut request: Request, next: Next) -> Response {
    let owner = match state.auth.authenticate(request.headers()) {
        Ok(owner) => owner,
        Err(e) => return OpenAiError::from(e).into_response(),
    };
    if let Err(e) = state.auth.admit(&owner) {
        return OpenAiError::from(e).into_response();
    }
    request.extensions_mut().insert(owner);
    next.run(request).await
}

async fn not_found() -> OpenAiError {
    OpenAiError::from(crate::server::ApiError::NotFound)
}

async fn method_not_allowed() -> OpenAiError {
    OpenAiError::from(crate::server::ApiError::MethodNotAllowed)
}

/// Seconds since the Unix epoch (`created`).
pub(crate) fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// `GET /v1/models`: the caller's agents (the configured ones, then its tenant's own), as
/// models owned by `reagent`. `created` is an API agent's latest version's time; for a
/// configured one, when the process first listed them (they are read at start-up).
async fn models(
    State(state): State<AppState>,
    Extension(owner): Extension<Owner>,
) -> Result<Json<Value>, OpenAiError> {
    static CREATED: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    let started = *CREATED.get_or_init(unix_now);
    let agents = state
        .runs
        .catalog()
        .list(&owner.0)
        .await
        .map_err(ApiError::from)?;
    let data: Vec<Value> = agents
        .iter()
        .map(|a| {
            let created = a
                .created_at
                .and_then(|t| u64::try_from(t.timestamp()).ok())
                .unwrap_or(started);
            json!({"id": a.spec.name, "object": "model", "created": created, "owned_by": "reagent"})
        })
        .collect();
    Ok(Json(json!({"object": "list", "data": data})))
}

/// The caller's agent named by a request's `model`: a configured agent or one of its
/// tenant's; anything else (another tenant's included) is OpenAI's `model_not_found`.
async fn caller_agent(
    state: &AppState,
    owner: &Owner,
    model: &str,
) -> Result<Arc<AgentSpec>, OpenAiError> {
    let found = state.runs.catalog().get(&owner.0, model, None).await;
    let found = found.map_err(ApiError::from)?;
    found
        .map(|a| a.spec)
        .ok_or_else(|| OpenAiError::model_not_found(model))
}
