//! A run waiting for its caller's tool outputs (docs/api.md "Caller tools") across kill -9: the
//! run ended `requires_action` holding only its checkpoint, so nothing is lost with the process.
//! After a restart on the same database (SQLite and PostgreSQL), or on PostgreSQL with the
//! outputs sent to another instance than the killed one that ran it (after the dead one's lease
//! lapsed, so the survivor's sweep has had its chance to touch the run), the run still waits,
//! the outputs start the continuation, the model reads them as the call's result, and its
//! reply is the answer.

use std::time::Duration;

use reagent::testing::fake_openai::{FakeOpenAi, FakeReply};
use serde_json::{json, Value};

use super::{kill_and_restart, start};
use crate::support::backends::{run_on, Backend};
use crate::support::child::Server;
use crate::support::cluster::Cluster;

on_both_backends!(
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    kill_9_while_a_run_waits_then_outputs_after_the_restart_continue_it
);

/// What the caller answers; the model must read it.
pub(super) const OUTPUT: &str = "yes, the caller confirmed order 4711";
pub(super) const ANSWER: &str = "Order 4711 is confirmed.";

/// A model that answers (the caller's `confirm` is called by [`paused_run`]'s first reply).
async fn llm() -> FakeOpenAi {
    let llm = FakeOpenAi::start().await.unwrap();
    llm.set_default(FakeReply::text(ANSWER));
    llm
}

/// Starts a run on `server` declaring the caller tool `confirm`, which `llm` calls once, and
/// reads it to its `done`: `requires_action`, naming the call. Returns the run id.
pub(super) async fn paused_run(server: &Server, llm: &FakeOpenAi) -> String {
    llm.push(FakeReply::tool_calls(vec![(
        "call_c1",
        "confirm",
        r#"{"question":"order 4711?"}"#,
    )]));
    let client = reqwest::Client::new();
    let conv: Value = client
        .post(server.url("/api/conversations"))
        .json(&json!({}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let tools = json!([{"type": "function", "function": {
        "name": "confirm",
        "parameters": {"type": "object", "properties": {"question": {"type": "string"}}}
    }}]);
    let conv = conv["id"].as_str().unwrap();
    let r = client
        .post(server.url(&format!("/api/conversations/{conv}/runs")))
        .json(&json!({"query": "confirm my order", "client_tools": tools}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 202);
    let body: Value = r.json().await.unwrap();
    let run = body["run_id"].as_str().unwrap().to_string();
    let events = server.events_until_done(&run, None).await;
    let done = &events.last().unwrap().data;
    assert_eq!(done["status"], "requires_action", "{done}");
    assert_eq!(
        done["required_action"]["tool_calls"][0]["call_id"],
        "call_c1"
    );
    run
}

/// On `server` (not the one that ran it): the run still waits; the outputs start the
/// continuation, which completes; the model's last request carries the output as the call's
/// result.
async fn outputs_continue(server: &Server, llm: &FakeOpenAi, run: &str) {
    let stored = server.get_json(&format!("/api/runs/{run}")).await;
    assert_eq!(stored["status"], "requires_action", "{stored}");
    let r = reqwest::Client::new()
        .post(server.url(&format!("/api/runs/{run}/tool_outputs")))
        .json(&json!({"outputs": [{"call_id": "call_c1", "output": OUTPUT}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 202, "{}", r.text().await.unwrap());
    let body: Value = r.json().await.unwrap();
    let next = body["run_id"].as_str().unwrap().to_string();
    let events = server.events_until_done(&next, None).await;
    assert_eq!(events[0].data["continues"], run);
    let done = &events.last().unwrap().data;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["answer"], ANSWER);
    // The continuation's loop call (the last call) reads the output as the call's result; its
    // reply is the answer, with no synthesis call (`synthesis = "auto"`).
    assert_eq!(done["synthesis"], false, "{done}");
    let requests = llm.requests();
    let loop_call = requests.last().unwrap();
    let result = loop_call["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == "call_c1")
        .map(|m| m["content"].clone());
    assert_eq!(result, Some(json!(OUTPUT)), "{loop_call}");
}

async fn kill_9_while_a_run_waits_then_outputs_after_the_restart_continue_it(db_url: String) {
    let dir = tempfile::tempdir().unwrap();
    let llm = llm().await;
    let mut server = start(dir.path(), &db_url, &llm.base_url()).await;
    let run = paused_run(&server, &llm).await;
    kill_and_restart(&mut server, dir.path(), &db_url, &llm.base_url(), &[]).await;
    // Past the killed process's lease (2 s here) and a sweep: the restarted one has looked.
    tokio::time::sleep(Duration::from_secs(4)).await;
    outputs_continue(&server, &llm, &run).await;
    server.kill9().await;
}

/// Two instances: `a` runs the run to its pause and is killed; the outputs go to `b`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_kill_9_of_the_instance_that_ran_a_waiting_run_outputs_to_another_continue_it() {
    run_on(Backend::Postgres, |db_url| async move {
        let llm = llm().await;
        let lease = [("REAGENT_LEASE_TTL_S", "2"), ("REAGENT_LEASE_RENEW_S", "1")];
        let mut cluster = Cluster::start(2, &db_url, &llm.base_url(), &lease).await;
        let run = paused_run(cluster.at(0), &llm).await;
        cluster.servers[0].kill9().await;
        tokio::time::sleep(Duration::from_secs(4)).await;
        outputs_continue(cluster.at(1), &llm, &run).await;
        assert!(
            !cluster.at(1).log().contains("took the run over"),
            "a waiting run is not running: nothing to take over"
        );
        cluster.servers[1].kill9().await;
    })
    .await;
}
