//! Single-process resume (docs/deployment.md): kill -9 while a run is in its tool loop, and the next
//! start goes on with it from its last checkpoint — the stream continues under the same run id
//! after `step {type:"resumed"}`, ids strictly increase (one gap, at the crash), no id a
//! client saw gets other content, and the run completes with its tools' results. With
//! `REAGENT_RESUME_ON_RESTART=false` the same kill ends the run `failed` as before. A tool call
//! in flight at the kill (a real HTTP tool that counts its calls) is answered as interrupted,
//! not called again, unless the tool is `idempotent = true`.

use std::time::Duration;

use reagent::agent::checkpoint::INTERRUPTED_TOOL;
use reagent::store::Store;
use reagent_mock::{MockConfig, MockProvider};
use uuid::Uuid;

use super::synthesis::{compare, events, watch};
use super::{kill_and_restart, probe_url, resume_env, start_with};
use crate::support::backends::{run_on, Backend};
use crate::support::lookup::{lookup_mock, tool_end_after_resumed, Lookup};
use crate::support::sse::Sse;

on_both_backends!(
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    kill_9_in_the_tool_loop_resumes_to_completion,
    kill_9_in_the_tool_loop_fails_the_run_when_resume_is_off,
    an_interrupted_tool_call_is_not_repeated,
    an_interrupted_idempotent_tool_call_runs_again
);

async fn kill_9_in_the_tool_loop_resumes_to_completion(db_url: String) {
    let replay = kill_after_first_tool(&db_url, true).await;
    let done = replay.last().unwrap();
    assert_eq!(done.event, "done");
    assert_eq!(done.data["status"], "completed", "{:?}", done.data);
    // Three tool calls across the two processes (an iteration the crash cut short runs
    // again, so the iterations may be one more than without the crash), then the answer.
    assert_eq!(done.data["tool_calls"], 3, "{:?}", done.data);
    let labels: Vec<String> = replay.iter().map(Sse::label).collect();
    assert!(labels.contains(&"answer:done".to_string()), "{labels:?}");
}

async fn kill_9_in_the_tool_loop_fails_the_run_when_resume_is_off(db_url: String) {
    let replay = kill_after_first_tool(&db_url, false).await;
    let done = replay.last().unwrap();
    assert_eq!(done.data["status"], "failed");
    assert_eq!(done.data["error"], "interrupted by server restart");
}

/// Starts a run of three tool iterations, kills the server after the first `tool_end`,
/// restarts it, and returns the run's whole replay once it ends (checked against what the
/// client saw before the kill).
async fn kill_after_first_tool(db_url: &str, resume: bool) -> Vec<Sse> {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockProvider::start(MockConfig {
        latency: Duration::from_millis(150),
        tokens_per_s: 200.0,
        answer_tokens: 20,
        tool_iterations: 3,
        ..MockConfig::default()
    })
    .await
    .unwrap();
    let llm = mock.base_url();
    let env = resume_env(resume);
    let mut server = start_with(dir.path(), db_url, &llm, &env).await;
    let (run, seen) = watch(&server, |e| e.label() == "step:tool_end").await;
    assert_eq!(
        seen.last().map(Sse::label).as_deref(),
        Some("step:tool_end")
    );
    kill_and_restart(&mut server, dir.path(), db_url, &llm, &env).await;
    let replay = events(&server, &run, None).await;
    compare(&run, &seen, &replay);
    let resumed: Vec<&Sse> = replay
        .iter()
        .filter(|e| e.label() == "step:resumed")
        .collect();
    if resume {
        assert_eq!(resumed.len(), 1, "run {run}: one resumed step");
        let metrics = reqwest::get(server.url("/metrics"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(
            metrics.contains("reagent_runs_resumed_total 1"),
            "{metrics}"
        );
        assert!(resumed[0].data["instance"]
            .as_str()
            .is_some_and(|i| !i.is_empty()));
        assert!(resumed[0].data["iteration"]
            .as_u64()
            .is_some_and(|i| i >= 1));
    } else {
        assert!(resumed.is_empty());
    }
    server.kill9().await;
    mock.shutdown().await;
    replay
}

async fn an_interrupted_tool_call_is_not_repeated(db_url: String) {
    let (hits, end) = kill_during_a_tool_call(&db_url, false).await;
    assert_eq!(
        hits, 1,
        "a tool that is not idempotent is never called twice"
    );
    assert_eq!(end.data["observation"], INTERRUPTED_TOOL, "{:?}", end.data);
    assert_eq!(end.data["error"], true);
}

async fn an_interrupted_idempotent_tool_call_runs_again(db_url: String) {
    let (hits, end) = kill_during_a_tool_call(&db_url, true).await;
    assert_eq!(hits, 2, "an idempotent tool runs again on resume");
    assert_eq!(end.data["error"], false, "{:?}", end.data);
}

/// A run whose one tool call (an HTTP tool whose first call never answers) is in flight when
/// the server is killed; after the restart the run resumes and completes. Returns the tool's
/// call count and the call's `tool_end` in the replay.
async fn kill_during_a_tool_call(db_url: &str, idempotent: bool) -> (usize, Sse) {
    let dir = tempfile::tempdir().unwrap();
    let tool = Lookup::serve().await;
    std::fs::write(dir.path().join("config.toml"), tool.config(idempotent)).unwrap();
    let mock = lookup_mock().await;
    let llm = mock.base_url();
    let env = [("REAGENT_HTTP_ALLOW_PRIVATE", "true")];
    let mut server = start_with(dir.path(), db_url, &llm, &env).await;
    let (run, _) = watch(&server, |e| e.label() == "step:tool_start").await;
    // Killed once the call is at the tool and the checkpoint naming it is stored.
    let store = Store::connect(&probe_url(db_url)).await.unwrap();
    tool.wait_in_flight(&store, Uuid::parse_str(&run).unwrap())
        .await;
    store.close().await;
    kill_and_restart(&mut server, dir.path(), db_url, &llm, &env).await;
    let replay = events(&server, &run, None).await;
    assert_eq!(replay.last().unwrap().data["status"], "completed");
    let end = tool_end_after_resumed(&replay);
    server.kill9().await;
    mock.shutdown().await;
    (tool.calls(), end)
}

/// Two processes on one PostgreSQL database: the second one started while the first runs a run
/// must not take (resume or fail) that run, whose lease the first keeps renewing: the first
/// finishes it alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_second_process_leaves_a_live_processs_runs_alone() {
    run_on(Backend::Postgres, |db_url| async move {
        let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let mock = MockProvider::start(MockConfig {
            latency: Duration::from_millis(1500),
            answer_tokens: 5,
            tool_iterations: 2,
            ..MockConfig::default()
        })
        .await
        .unwrap();
        let llm = mock.base_url();
        let mut a = start_with(dir_a.path(), &db_url, &llm, &[]).await;
        let (run, _) = watch(&a, |e| e.event == "start").await;
        let mut b = start_with(dir_b.path(), &db_url, &llm, &[]).await;
        let replay = events(&a, &run, None).await;
        assert_eq!(replay.last().unwrap().data["status"], "completed");
        let store = Store::connect(&db_url).await.unwrap();
        let stored = store
            .list_events(Uuid::parse_str(&run).unwrap(), 0)
            .await
            .unwrap();
        assert!(
            stored.iter().all(|e| !e.data.contains("\"resumed\"")),
            "the second process resumed a live run"
        );
        store.close().await;
        assert!(!b.log().contains("took the run over"), "{}", b.log());
        for log in [a.log(), b.log()] {
            assert!(!log.contains("could not renew"), "{log}");
            assert!(!log.contains("could not record"), "{log}");
        }
        b.kill9().await;
        a.kill9().await;
        mock.shutdown().await;
    })
    .await;
}
