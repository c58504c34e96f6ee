//! A tool call in flight when its instance dies (docs/deployment.md): the instance that takes the run
//! over answers it `[interrupted: …]` without calling the tool again, unless the tool is
//! `idempotent = true`, which it calls again. The tool is a real HTTP tool that counts its
//! calls and never answers the first one.

use reagent::agent::checkpoint::INTERRUPTED_TOOL;
use reagent::store::Store;

use super::{replay, taken_over, watch, LEASE_ENV};
use crate::support::backends::{run_on, Backend};
use crate::support::cluster::Cluster;
use crate::support::lookup::{lookup_mock, tool_end_after_resumed, Lookup};
use crate::support::sse::Sse;

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
    let tool = Lookup::serve().await;
    let config = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(config.path(), tool.config(idempotent)).unwrap();
    let mock = lookup_mock().await;
    let path = config.path().to_str().unwrap().to_string();
    let mut env: Vec<(&str, &str)> = LEASE_ENV.to_vec();
    env.extend([
        ("REAGENT_HTTP_ALLOW_PRIVATE", "true"),
        ("REAGENT_CONFIG", path.as_str()),
    ]);
    let mut cluster = Cluster::start(3, db_url, &mock.base_url(), &env).await;
    let (run, _) = watch(cluster.at(0), |e| e.label() == "step:tool_start").await;
    let store = Store::connect(db_url).await.unwrap();
    tool.wait_in_flight(&store, run).await;
    cluster.servers[0].kill9().await;
    let (taker, _) = taken_over(&store, run, "a").await;
    let taker_at = if taker == "b" { 1 } else { 2 };
    let replay = replay(cluster.at(taker_at), run).await;
    assert_eq!(replay.last().unwrap().data["status"], "completed");
    let end = tool_end_after_resumed(&replay);
    store.close().await;
    mock.shutdown().await;
    (tool.calls(), end)
}
