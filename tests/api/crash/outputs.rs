//! Caller-tool outputs acknowledged just before a kill -9 (issue 51, item 1): the outputs are
//! stored with the continuation before the answer (`202` from `/api`, `200` from a background
//! `/v1/responses`), so the instance killed at once leaves a continuation that a restart
//! (SQLite, PostgreSQL) or another instance (PostgreSQL) resumes with them, to `completed`.
//! Each test alternates the two routes over several rounds: the kill lands in a few
//! milliseconds, before the continuation's own first write in most rounds.

use reagent::testing::fake_openai::{FakeOpenAi, FakeReply};
use serde_json::{json, Value};

use super::kill_and_restart;
use super::waiting::{paused_run, ANSWER, OUTPUT};
use crate::support::backends::{run_on, Backend};
use crate::support::child::Server;
use crate::support::cluster::Cluster;

on_both_backends!(
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    outputs_acknowledged_then_kill_9_continue_after_the_restart
);

const ROUNDS: usize = 4;

/// Sends the outputs of `run`'s call `call_c1` (round `i`: even through `/api`, odd as a
/// background response) and returns the continuation's run id once acknowledged.
async fn send_outputs(server: &Server, run: &str, i: usize) -> String {
    let client = reqwest::Client::new();
    if i.is_multiple_of(2) {
        let r = client
            .post(server.url(&format!("/api/runs/{run}/tool_outputs")))
            .json(&json!({"outputs": [{"call_id": "call_c1", "output": OUTPUT}]}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 202);
        let body: Value = r.json().await.unwrap();
        return body["run_id"].as_str().unwrap().to_string();
    }
    let r = client
        .post(server.url("/v1/responses"))
        .json(&json!({
            "model": "reagent", "background": true, "previous_response_id": format!("resp_{run}"),
            "input": [{"type": "function_call_output", "call_id": "call_c1", "output": OUTPUT}],
        }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let body: Value = r.json().await.unwrap();
    body["id"]
        .as_str()
        .unwrap()
        .trim_start_matches("resp_")
        .to_string()
}

/// On `server`: the continuation ends `completed` with the model's answer, and the model was
/// sent the output as the call's result.
async fn completed_with_the_output(server: &Server, llm: &FakeOpenAi, paused: &str, next: &str) {
    let events = server.events_until_done(next, None).await;
    assert_eq!(events[0].event, "start");
    assert_eq!(events[0].data["continues"], paused);
    let done = &events.last().unwrap().data;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["answer"], ANSWER);
    let carried = llm.requests().iter().any(|r| {
        r["messages"].as_array().is_some_and(|m| {
            m.iter()
                .any(|m| m["tool_call_id"] == "call_c1" && m["content"] == OUTPUT)
        })
    });
    assert!(carried, "no model request carried the output");
}

async fn outputs_acknowledged_then_kill_9_continue_after_the_restart(db_url: String) {
    let dir = tempfile::tempdir().unwrap();
    let llm = FakeOpenAi::start().await.unwrap();
    llm.set_default(FakeReply::text(ANSWER));
    let mut server = super::start(dir.path(), &db_url, &llm.base_url()).await;
    for i in 0..ROUNDS {
        let run = paused_run(&server, &llm).await;
        let next = send_outputs(&server, &run, i).await;
        kill_and_restart(&mut server, dir.path(), &db_url, &llm.base_url(), &[]).await;
        completed_with_the_output(&server, &llm, &run, &next).await;
    }
    server.kill9().await;
}

/// Two instances: `a` acknowledges the outputs and is killed at once; `b` takes the
/// continuation over when `a`'s lease lapses and completes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_outputs_acknowledged_then_kill_9_another_instance_continues() {
    run_on(Backend::Postgres, |db_url| async move {
        let llm = FakeOpenAi::start().await.unwrap();
        llm.set_default(FakeReply::text(ANSWER));
        let lease = [("REAGENT_LEASE_TTL_S", "2"), ("REAGENT_LEASE_RENEW_S", "1")];
        let mut cluster = Cluster::start(2, &db_url, &llm.base_url(), &lease).await;
        for i in 0..ROUNDS {
            let run = paused_run(cluster.at(0), &llm).await;
            let next = send_outputs(cluster.at(0), &run, i).await;
            cluster.servers[0].kill9().await;
            completed_with_the_output(cluster.at(1), &llm, &run, &next).await;
            cluster.restart(0).await;
        }
        for s in &mut cluster.servers {
            s.kill9().await;
        }
    })
    .await;
}
