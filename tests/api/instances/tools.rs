//! A tool call in flight when its instance dies (SPEC §11): the instance that takes the run
//! over answers it `[interrupted: …]` without calling the tool again, unless the tool is
//! `idempotent = true`, which it calls again. The tool is a real HTTP tool that counts its
//! calls and never answers the first one.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::routing::post;
use axum::{Json, Router};
use reagent::agent::checkpoint::INTERRUPTED_TOOL;
use reagent::store::Store;
use reagent::testing::mock_provider::{MockConfig, MockProvider};
use serde_json::json;

use super::{replay, taken_over, watch, LEASE_ENV};
use crate::support::backends::{run_on, Backend};
use crate::support::cluster::Cluster;
use crate::support::eventually;
use crate::support::sse::Sse;
use crate::support::target::Target;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_taken_over_tool_call_is_not_repeated() {
    run_on(Backend::Postgres, |db_url| async move {
        let (hits, end) = kill_owner_during_a_tool_call(&db_url, false).await;
        assert_eq!(
            hits, 1,
            "a tool that is not idempotent is never called twice"
        );
        assert_eq!(end.data["observation"], INTERRUPTED_TOOL, "{:?}", end.data);
        assert_eq!(end.data["error"], true);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_taken_over_idempotent_tool_call_runs_again() {
    run_on(Backend::Postgres, |db_url| async move {
        let (hits, end) = kill_owner_during_a_tool_call(&db_url, true).await;
        assert_eq!(hits, 2, "an idempotent tool runs again on the taker");
        assert_eq!(end.data["error"], false, "{:?}", end.data);
    })
    .await;
}

/// Three instances; a run on the first whose one tool call is in flight (and checkpointed)
/// when the first is killed; another instance takes it over and completes it. Returns the
/// tool's call count and the call's `tool_end` after `resumed`.
async fn kill_owner_during_a_tool_call(db_url: &str, idempotent: bool) -> (usize, Sse) {
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
    let tool = Target::serve("127.0.0.1", routes).await;
    let config = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        config.path(),
        format!(
            "[[tools.http]]\nname = \"lookup\"\ndescription = \"looks up\"\nurl = \"{}\"\n\
             idempotent = {idempotent}\ntimeout_s = 120\n",
            tool.url("/lookup")
        ),
    )
    .unwrap();
    let mock = MockProvider::start(MockConfig {
        latency: Duration::from_millis(20),
        answer_tokens: 5,
        tool_iterations: 1,
        tool: "lookup".into(),
        tool_args: "{}".into(),
        ..MockConfig::default()
    })
    .await
    .unwrap();
    let path = config.path().to_str().unwrap().to_string();
    let mut env: Vec<(&str, &str)> = LEASE_ENV.to_vec();
    env.extend([
        ("REAGENT_HTTP_ALLOW_PRIVATE", "true"),
        ("REAGENT_CONFIG", path.as_str()),
    ]);
    let mut cluster = Cluster::start(3, db_url, &mock.base_url(), &env).await;
    let (run, _) = watch(cluster.at(0), |e| e.label() == "step:tool_start").await;
    let store = Store::connect(db_url).await.unwrap();
    eventually(
        "the call reached the tool, its checkpoint stored",
        || async {
            let stored = store.run_checkpoint(run).await.unwrap().unwrap_or_default();
            calls.load(Ordering::SeqCst) == 1 && stored.contains("\"in_flight\":[{")
        },
    )
    .await;
    cluster.servers[0].kill9().await;
    let (taker, _) = taken_over(&store, run, "a").await;
    let taker_at = if taker == "b" { 1 } else { 2 };
    let replay = replay(cluster.at(taker_at), run).await;
    assert_eq!(replay.last().unwrap().data["status"], "completed");
    let resumed = replay
        .iter()
        .position(|e| e.label() == "step:resumed")
        .expect("a resumed step");
    let end = replay
        .iter()
        .skip(resumed)
        .find(|e| e.label() == "step:tool_end")
        .expect("the interrupted call's tool_end after resumed")
        .clone();
    store.close().await;
    mock.shutdown().await;
    (calls.load(Ordering::SeqCst), end)
}
