//! Single-process resume (SPEC §11): kill -9 while a run is in its tool loop, and the next
//! start goes on with it from its last checkpoint — the stream continues under the same run id
//! after `step {type:"resumed"}`, ids strictly increase (one gap, at the crash), no id a
//! client saw gets other content, and the run completes with its tools' results. With
//! `REAGENT_RESUME_ON_RESTART=false` the same kill ends the run `failed` as before.

use std::time::Duration;

use reagent::testing::mock_provider::{MockConfig, MockProvider};

use super::synthesis::{compare, events, watch};
use super::{start_with, wait_for_dead_sessions};
use crate::support::sse::Sse;

on_both_backends!(
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    kill_9_in_the_tool_loop_resumes_to_completion,
    kill_9_in_the_tool_loop_fails_the_run_when_resume_is_off
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
    let env = [(
        "REAGENT_RESUME_ON_RESTART",
        if resume { "true" } else { "false" },
    )];
    let mut server = start_with(dir.path(), db_url, &llm, &env).await;
    let (run, seen) = watch(&server, |e| e.label() == "step:tool_end").await;
    assert_eq!(
        seen.last().map(Sse::label).as_deref(),
        Some("step:tool_end")
    );
    server.kill9().await;
    wait_for_dead_sessions(db_url).await;
    server = start_with(dir.path(), db_url, &llm, &env).await;
    let replay = events(&server, &run, None).await;
    compare(&run, &seen, &replay);
    let resumed: Vec<&Sse> = replay
        .iter()
        .filter(|e| e.label() == "step:resumed")
        .collect();
    if resume {
        assert_eq!(resumed.len(), 1, "run {run}: one resumed step");
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
