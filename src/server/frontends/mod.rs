//! The front-end protocols (docs/protocols.md): `POST /ag-ui/{agent}` speaks AG-UI 1.0 and
//! `POST /ai-sdk/{agent}` the AI SDK's UI message stream, so CopilotKit, assistant-ui or a
//! `useChat` app talks to an agent with no adapter of its own. Both are thin encoders over the
//! same runs as `/api`: same keys, tenancy and rate limit, and a client that goes away never
//! cancels its run. Files: `threads` (thread ids, the resent history, starting or resuming),
//! `body` (the streamed response and the [`body::Encoder`] each protocol implements),
//! `ag_ui`, `ai_sdk` (the protocols), `openapi` (their routes in the OpenAPI document).

mod ag_ui;
mod ai_sdk;
mod body;
pub mod openapi;
mod threads;

use axum::middleware::from_fn_with_state;
use axum::routing::post;
use axum::Router;

use super::auth;
use super::error;
use super::state::AppState;

/// `/ag-ui/{agent}` and `/ai-sdk/{agent}`, behind `/api`'s key check and rate limit.
pub fn routes(state: &AppState) -> Router<AppState> {
    Router::new()
        .route("/ag-ui/{agent}", post(ag_ui::run))
        .route("/ai-sdk/{agent}", post(ai_sdk::chat))
        .method_not_allowed_fallback(error::method_not_allowed)
        .route_layer(from_fn_with_state(state.auth.clone(), auth::require_key))
}
