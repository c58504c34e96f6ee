//! A tool call in flight when its process dies (docs/deployment.md): `lookup`, a real HTTP tool that
//! counts its calls and never answers the first one, and a mock model that calls it once.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::routing::post;
use axum::{Json, Router};
use reagent::store::Store;
use reagent_mock::{MockConfig, MockProvider};
use serde_json::json;
use uuid::Uuid;

use super::eventually;
use super::sse::Sse;
use super::target::Target;

/// The `lookup` tool's server and how many calls it received.
pub struct Lookup {
    pub target: Target,
    calls: Arc<AtomicUsize>,
}

impl Lookup {
    /// Serves the tool on 127.0.0.1; its first call hangs forever, the others answer.
    pub async fn serve() -> Lookup {
        let calls = Arc::new(AtomicUsize::new(0));
        let counter = calls.clone();
        let routes = Router::new().route(
            "/lookup",
            post(move || {
                let counter = counter.clone();
                async move {
                    if counter.fetch_add(1, Ordering::SeqCst) == 0 {
                        std::future::pending::<()>().await;
                    }
                    Json(json!({"result": "found"}))
                }
            }),
        );
        let target = Target::serve("127.0.0.1", routes).await;
        Lookup { target, calls }
    }

    /// The `[[tools.http]]` entry of the tool (a long timeout: only a kill ends the first call).
    pub fn config(&self, idempotent: bool) -> String {
        format!(
            "[[tools.http]]\nname = \"lookup\"\ndescription = \"looks up\"\nurl = \"{}\"\n\
             idempotent = {idempotent}\ntimeout_s = 120\n",
            self.target.url("/lookup")
        )
    }

    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    /// Waits until the call reached the tool and `run`'s stored checkpoint names it in flight,
    /// the moment a kill leaves the call interrupted.
    pub async fn wait_in_flight(&self, store: &Store, run: Uuid) {
        eventually(
            "the call reached the tool, its checkpoint stored",
            || async {
                let stored = store.run_checkpoint(run).await.unwrap().unwrap_or_default();
                self.calls() == 1 && stored.contains("\"in_flight\":[{")
            },
        )
        .await;
    }
}

/// A mock model whose one tool iteration calls `lookup`.
pub async fn lookup_mock() -> MockProvider {
    MockProvider::start(MockConfig {
        latency: Duration::from_millis(20),
        answer_tokens: 5,
        tool_iterations: 1,
        tool: "lookup".into(),
        tool_args: "{}".into(),
        ..MockConfig::default()
    })
    .await
    .unwrap()
}

/// The interrupted call's `tool_end`: the first after `step:resumed` in `replay`.
pub fn tool_end_after_resumed(replay: &[Sse]) -> Sse {
    let resumed = replay
        .iter()
        .position(|e| e.label() == "step:resumed")
        .expect("a resumed step");
    replay
        .iter()
        .skip(resumed)
        .find(|e| e.label() == "step:tool_end")
        .expect("the interrupted call's tool_end after resumed")
        .clone()
}
