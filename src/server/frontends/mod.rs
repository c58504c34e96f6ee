//! The front-end protocols (docs/protocols.md): `POST /ag-ui/{agent}` speaks AG-UI 1.0 and
//! `POST /ai-sdk/{agent}` the AI SDK's UI message stream, so CopilotKit, assistant-ui or a
//! `useChat` app talks to an agent with no adapter of its own. Both are thin encoders over the
//! same runs as `/api`: same keys, tenancy and rate limit, and a client that goes away never
//! cancels its run. Files: `threads` (thread ids, the resent history, starting or resuming),
//! `body` (the streamed response and the [`body::Encoder`] each protocol implements),
//! `ag_ui`, `ai_sdk` (the protocols), `images` (their image parts), `openapi` (their routes in the OpenAPI document). A page
//! served from another origin (`examples/ag-ui`) may call them when `[server] cors_origins`
//! names its origin (docs/configuration.md).

mod ag_ui;
mod ai_sdk;
mod body;
mod images;
pub mod openapi;
mod threads;

use std::time::Duration;

use axum::http::{header, HeaderName, HeaderValue, Method};
use axum::middleware::from_fn_with_state;
use axum::routing::{get, post};
use axum::Router;
use tower_http::cors::{AllowOrigin, CorsLayer};

use super::auth;
use super::error;
use super::state::AppState;

/// `/ag-ui/{agent}` and `/ai-sdk/{agent}`, behind `/api`'s key check and rate limit, and
/// open to the configured browser origins.
pub fn routes(state: &AppState) -> Router<AppState> {
    let with_images = super::images::body_limit(&state.config.server);
    let router = Router::new()
        .route("/ag-ui/{agent}", post(ag_ui::run).layer(with_images))
        .route("/ai-sdk/{agent}", post(ai_sdk::chat).layer(with_images))
        .route(
            "/ai-sdk/{agent}/{id}/stream",
            get(ai_sdk::reconnect::stream),
        )
        .method_not_allowed_fallback(error::method_not_allowed)
        .route_layer(from_fn_with_state(state.auth.clone(), auth::require_key));
    match cors(&state.config.server.cors_origins) {
        // Outside the key check: a preflight carries no key.
        Some(layer) => router.layer(layer),
        None => router,
    }
}

/// The CORS policy for `origins` (checked at start-up); `None` when there are none.
fn cors(origins: &[String]) -> Option<CorsLayer> {
    if origins.is_empty() {
        return None;
    }
    let allow = if origins.iter().any(|o| o == "*") {
        AllowOrigin::any()
    } else {
        AllowOrigin::list(origins.iter().filter_map(|o| HeaderValue::from_str(o).ok()))
    };
    let headers = [
        header::AUTHORIZATION,
        header::CONTENT_TYPE,
        header::ACCEPT,
        HeaderName::from_static("last-event-id"),
        HeaderName::from_static("traceparent"),
        HeaderName::from_static("tracestate"),
    ];
    Some(
        CorsLayer::new()
            .allow_origin(allow)
            .allow_methods([Method::GET, Method::POST])
            .allow_headers(headers)
            .expose_headers([HeaderName::from_static(ai_sdk::STREAM_HEADER)])
            .max_age(Duration::from_secs(600)),
    )
}
