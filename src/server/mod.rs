//! The HTTP service (SPEC §3, §4). Layout: [`AppState`] and [`App::build`] (here), the router
//! ([`router`]) and [`serve`]; `error` (ApiError and JSON rejections), `auth` (keys, tenancy,
//! rate limit), `sse` (the event-stream adapter), one file per resource (`conversations`,
//! `runs`, `approvals`), `ops` (health, metrics, catalog, artifacts), `openapi`, `metrics`,
//! `audit` (the audit hook's store sink).
//!
//! [`App::build`] assembles the whole service from a [`Config`] — store, restart recovery, run
//! manager, tools, hooks — and is used by both `main` and the integration tests, so tests run
//! the real router; [`AppOverrides`] only swaps the model clients and tools for fakes.

pub mod approvals;
pub mod audit;
pub mod auth;
pub mod conversations;
pub mod error;
pub mod listen;
pub mod metrics;
pub mod openapi;
pub mod ops;
pub mod runs;
pub mod sse;
pub mod stall;

use std::sync::Arc;
use std::time::Duration;

use axum::extract::DefaultBodyLimit;
use axum::handler::HandlerWithoutStateExt;
use axum::middleware::from_fn_with_state;
use axum::routing::{delete, get, post};
use axum::Router;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::services::ServeDir;
use tower_http::trace::TraceLayer;

use crate::agent::hooks::approval::ApprovalBroker;
use crate::agent::hooks::builtin::AuditSink;
use crate::config::{Config, ConfigError};
use crate::llm::registry::ModelRegistry;
use crate::runs::setup::{agent_config, hook_runner, tool_registry, SetupError};
use crate::runs::{RunError, RunManager};
use crate::store::{Store, StoreError};
use crate::tools::ToolRegistry;

pub use auth::{Auth, Owner};
pub use error::ApiError;
pub use listen::{listen, serve, serve_with, ConnectionLimits};
pub use metrics::Metrics;

/// What every handler can reach. Cheap to clone.
#[derive(Clone)]
pub struct AppState {
    pub config: Arc<Config>,
    pub store: Store,
    pub runs: Arc<RunManager>,
    pub models: ModelRegistry,
    pub approvals: Arc<ApprovalBroker>,
    pub metrics: Metrics,
    pub auth: Arc<Auth>,
    /// Quiet time before an SSE `: keep-alive` comment (15 s; shorter in tests).
    pub keep_alive: Duration,
}

/// What tests may swap; `None` means "as configured".
#[derive(Default)]
pub struct AppOverrides {
    /// Model clients (fakes); the configuration's `[[models]]` otherwise.
    pub models: Option<ModelRegistry>,
    /// Tools; built-ins plus `[[tools.http]]` otherwise.
    pub tools: Option<ToolRegistry>,
    pub keep_alive: Option<Duration>,
    /// Longest wait before events reach the database (the run manager's default otherwise).
    pub flush_interval: Option<Duration>,
}

/// Why the service could not start.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("database: {0}")]
    Store(#[from] StoreError),
    #[error("{0}")]
    Config(#[from] ConfigError),
    #[error("{0}")]
    Setup(#[from] SetupError),
    #[error("restart recovery failed: {0}")]
    Recover(#[from] RunError),
}

/// The assembled service.
pub struct App {
    pub state: AppState,
}

impl App {
    /// Connects the store (migrating it), marks runs a previous process left `running` as
    /// failed, and builds the run manager with the configured tools and hooks.
    pub async fn build(config: Config, overrides: AppOverrides) -> Result<App, BuildError> {
        let store = Store::connect(&config.server.database_url).await?;
        let metrics = Metrics::new();
        let models = match overrides.models {
            Some(m) => m,
            None => ModelRegistry::from_config(&config)?,
        };
        let models = metrics.meter_models(&models);
        let http = reqwest::Client::new();
        let tools = match overrides.tools {
            Some(t) => t,
            None => tool_registry(&config, &http)?,
        };
        let approvals = Arc::new(ApprovalBroker::new());
        let audit = Arc::new(audit::StoreAudit(store.clone())) as Arc<dyn AuditSink>;
        let hooks = hook_runner(&config, &tools, approvals.clone(), Some(audit), &http)?;
        let compact = config
            .react
            .compact_model
            .as_deref()
            .and_then(|name| models.get(name));
        let mut manager = RunManager::new(
            store.clone(),
            models.clone(),
            tools,
            hooks,
            agent_config(&config.react),
            compact,
        );
        if let Some(interval) = overrides.flush_interval {
            manager.flush_interval = interval;
        }
        manager.observer = Some(metrics.run_observer());
        let runs = Arc::new(manager);
        let recovered = runs.recover().await?;
        if recovered > 0 {
            tracing::warn!(
                runs = recovered,
                "marked runs left running by a previous process as failed"
            );
        }
        let auth = Arc::new(Auth::new(&config.auth, config.server.rate_limit_per_minute));
        Ok(App {
            state: AppState {
                config: Arc::new(config),
                store,
                runs,
                models,
                approvals,
                metrics,
                auth,
                keep_alive: overrides.keep_alive.unwrap_or(sse::DEFAULT_KEEP_ALIVE),
            },
        })
    }

    pub fn router(&self) -> Router {
        router(self.state.clone())
    }

    /// Stops runs (cancelling the active ones, waiting up to `grace` for their final state)
    /// and closes the database pool.
    pub async fn shutdown(&self, grace: Duration) {
        self.state.runs.shutdown(grace).await;
        self.state.store.close().await;
    }
}

/// The `/api` routes; every one needs a key when auth is on.
fn api_routes(state: &AppState) -> Router<AppState> {
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
        .route("/conversations/{id}/runs", post(runs::start))
        .route("/conversations/{id}/interrupt", post(runs::interrupt))
        .route(
            "/conversations/{id}/interrupt/{interrupt_id}",
            delete(runs::recall),
        )
        .route("/chat", post(runs::chat))
        .route("/runs/{run_id}", get(runs::show))
        .route("/runs/{run_id}/events", get(runs::events))
        .route("/runs/{run_id}/cancel", post(runs::cancel))
        .route("/approvals", get(approvals::list))
        .route("/approvals/{id}", post(approvals::decide))
        .route("/tools", get(ops::tools))
        .route("/models", get(ops::models))
        .route("/artifacts/{id}", get(ops::artifact))
        .route("/openapi.json", get(openapi::document))
        .method_not_allowed_fallback(error::method_not_allowed)
        .route_layer(from_fn_with_state(state.clone(), auth::require_key))
}

/// The application's routes and layers.
pub fn router(state: AppState) -> Router {
    let statics = ServeDir::new(&state.config.server.static_dir)
        .call_fallback_on_method_not_allowed(true)
        .not_found_service(error::not_found.into_service());
    Router::new()
        .nest("/api", api_routes(&state))
        .route("/healthz", get(ops::healthz))
        .route("/readyz", get(ops::readyz))
        .route("/metrics", get(ops::metrics))
        .method_not_allowed_fallback(error::method_not_allowed)
        .fallback_service(statics)
        .layer(DefaultBodyLimit::max(state.config.server.max_body_bytes))
        .layer(CatchPanicLayer::custom(error::panic_response))
        .layer(TraceLayer::new_for_http())
        .with_state(state)
}
