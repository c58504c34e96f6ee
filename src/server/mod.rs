//! The HTTP service. For now only the skeleton the full API (SPEC §3, a later issue) grows
//! from: the shared [`AppState`], the [`router`] with `GET /healthz`, and [`serve`], which takes
//! a bound listener and a shutdown future so that tests bind port 0 and decide when to stop.

use std::future::Future;
use std::sync::Arc;

use axum::routing::get;
use axum::{Json, Router};
use serde_json::{json, Value};
use tokio::net::TcpListener;

use crate::config::Config;
use crate::llm::registry::ModelRegistry;

/// What every handler can reach. Cheap to clone.
#[derive(Clone, Debug)]
pub struct AppState {
    pub config: Arc<Config>,
    pub models: ModelRegistry,
}

impl AppState {
    pub fn new(config: Arc<Config>, models: ModelRegistry) -> Self {
        Self { config, models }
    }

    /// The production state: one client per configured model.
    pub fn from_config(config: Config) -> Result<Self, crate::config::ConfigError> {
        let models = ModelRegistry::from_config(&config)?;
        Ok(Self::new(Arc::new(config), models))
    }
}

/// The application's routes.
pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .with_state(state)
}

/// Process liveness: answers as long as the process serves requests (no database check; that
/// is `/readyz`, which comes with the store).
async fn healthz() -> Json<Value> {
    Json(json!({"status": "ok"}))
}

/// Serves `router` on `listener` until `shutdown` completes, then stops accepting connections
/// and waits for in-flight requests (axum graceful shutdown). Callers that need a deadline race
/// this future against a timer.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router)
        .with_graceful_shutdown(shutdown)
        .await
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn state() -> AppState {
        let config = Config::load_from(None, &HashMap::new()).unwrap();
        AppState::from_config(config).unwrap()
    }

    #[tokio::test]
    async fn healthz_answers_ok_and_shutdown_stops_the_server() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(serve(listener, router(state()), async {
            let _ = stopped.await;
        }));

        let response = reqwest::get(format!("http://{addr}/healthz"))
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        let body: Value = response.json().await.unwrap();
        assert_eq!(body, json!({"status": "ok"}));

        let missing = reqwest::get(format!("http://{addr}/nope")).await.unwrap();
        assert_eq!(missing.status(), 404);

        stop.send(()).unwrap();
        server.await.unwrap().unwrap();
        assert!(reqwest::get(format!("http://{addr}/healthz"))
            .await
            .is_err());
    }
}
