//! The HTTP layer (docs/api.md): routes and handlers. Here: the [`router`]. Files: one per
//! resource (`conversations`, `runs`, `approvals`), each handler extracting the request, making
//! one call (to the [`crate::runs::RunManager`] or the store) and mapping the result; `ops`
//! (health, metrics, catalog, artifacts), `views` (the response types: the JSON the API
//! answers with, converted from store rows, with their OpenAPI schemas), `openapi` (the document,
//! one part per area of the API); `state` ([`AppState`], what handlers
//! reach; [`crate::app`] builds it), `error` (ApiError and JSON rejections), `auth` (keys,
//! tenancy, rate limit), `sse` (the event-stream adapter), `listen` (the accept loop and its
//! connection limits), `metrics` (the Prometheus recorder), `audit` (the audit hook's store
//! sink), `agents` (`/api/agents`: configured and API agents), `openai/` (the OpenAI-compatible `/v1` API,
//! docs/protocols.md), `frontends/` (AG-UI and the AI SDK stream, docs/protocols.md),
//! `mcp_server/` (the agents as MCP tools at `/mcp`, docs/protocols.md), `a2a/` (each agent as
//! an A2A agent at `/a2a/{agent}`, docs/protocols.md).

pub mod a2a;
mod access;
pub mod agents;
pub mod approvals;
pub mod audit;
pub mod auth;
pub mod caller_tools;
pub mod conversations;
pub mod error;
pub mod event_body;
pub mod frontends;
pub mod images;
pub mod listen;
pub mod long_uri;
pub mod mcp_clients;
pub mod mcp_server;
pub mod metrics;
pub mod openai;
pub mod openapi;
pub mod ops;
pub mod runs;
pub mod sse;
pub mod stall;
mod state;
pub mod statics;
pub mod usage;
pub mod views;

use axum::extract::DefaultBodyLimit;
use axum::middleware::from_fn_with_state;
use axum::routing::{delete, get, post};
use axum::Router;
use tower_http::catch_panic::CatchPanicLayer;

pub use auth::{Auth, Owner};
pub use error::ApiError;
pub use listen::{listen, serve, serve_with, ConnectionLimits};
pub use metrics::Metrics;
pub use state::AppState;

/// The `/api` routes; every one needs a key when auth is on.
fn api_routes(state: &AppState) -> Router<AppState> {
    let with_images = images::body_limit(&state.config.server);
    Router::new()
        .route(
            "/conversations",
            post(conversations::create).get(conversations::list),
        )
        .route(
            "/conversations/{id}",
            get(conversations::show)
                .patch(conversations::rename)
                .delete(conversations::remove),
        )
        .route(
            "/conversations/{id}/runs",
            post(runs::start).layer(with_images),
        )
        .route("/conversations/{id}/fork", post(conversations::fork))
        .route("/conversations/{id}/interrupt", post(runs::interrupt))
        .route(
            "/conversations/{id}/interrupt/{interrupt_id}",
            delete(runs::recall),
        )
        .route("/chat", post(runs::chat).layer(with_images))
        .route("/runs/{run_id}", get(runs::show))
        .route("/runs/{run_id}/events", get(runs::events))
        .route("/runs/{run_id}/cancel", post(runs::cancel))
        .route("/runs/{run_id}/tool_outputs", post(runs::tool_outputs))
        .route("/approvals", get(approvals::list))
        .route("/approvals/{id}", post(approvals::decide))
        .route("/tools", get(ops::tools))
        .route("/mcp", get(mcp_clients::list))
        .route("/models", get(ops::models))
        .route("/agents", get(agents::list).post(agents::create))
        .route(
            "/agents/{name}",
            get(agents::show).put(agents::update).delete(agents::remove),
        )
        .route("/agents/{name}/versions", get(agents::versions))
        .route("/agents/{name}/versions/{version}", get(agents::version))
        .route("/artifacts/{id}", get(ops::artifact))
        .route("/openapi.json", get(openapi::document))
        .method_not_allowed_fallback(error::method_not_allowed)
        .route_layer(from_fn_with_state(state.auth.clone(), auth::require_key))
}

/// The application's routes and layers.
pub fn router(state: AppState) -> Router {
    let statics = statics::service(state.config.server.static_dir.as_deref());
    Router::new()
        .nest("/api", api_routes(&state))
        .nest("/v1", openai::routes(&state))
        .merge(frontends::routes(&state))
        .merge(mcp_server::routes(&state))
        .merge(a2a::routes(&state))
        .route("/healthz", get(ops::healthz))
        .route("/readyz", get(ops::readyz))
        .route("/metrics", get(ops::metrics))
        // Outside `/api`'s key layer: guarded like `/metrics` (docs/deployment.md).
        .route("/api/instances", get(ops::instances))
        // An API key, or the metrics key for every tenant's usage.
        .route("/api/usage", get(usage::usage))
        .method_not_allowed_fallback(error::method_not_allowed)
        .fallback_service(statics)
        .layer(DefaultBodyLimit::max(state.config.server.max_body_bytes))
        .layer(CatchPanicLayer::custom(error::panic_response))
        // Applied per route, so they see the matched route template; `adopt` outermost, so
        // that what a request starts joins the trace its `traceparent` names.
        .layer(axum::middleware::from_fn(access::log))
        .layer(axum::middleware::from_fn(
            crate::telemetry::propagation::adopt,
        ))
        .with_state(state)
}
