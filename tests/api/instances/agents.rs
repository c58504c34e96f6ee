//! Agents managed at run time on two real instances (docs/api.md "Agents"): an agent made and
//! changed through one process is what the other's next run uses, with no restart; a run of one
//! taken over after its owner's kill -9 goes on with the version its conversation recorded.

use reagent::store::Store;
use reagent::testing::fake_openai::{FakeOpenAi, FakeReply};
use serde_json::{json, Value};
use uuid::Uuid;

use crate::support::backends::{run_on, Backend};
use crate::support::child::Server;
use crate::support::cluster::Cluster;
use crate::support::sse::read_all;

use super::{replay, taken_over, LEASE_ENV};

/// `/api/chat` with the agent `writer` on `server`; the system prompt the model was sent.
async fn chat_prompt(server: &Server, llm: &FakeOpenAi) -> String {
    let before = llm.requests().len();
    let r = reqwest::Client::new()
        .post(server.url("/api/chat"))
        .json(&json!({"query": "hi", "agent": "writer"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let events = read_all(r).await;
    assert_eq!(events.last().map(|e| e.event.as_str()), Some("done"));
    let request = llm.requests()[before].clone();
    request["messages"][0]["content"].to_string()
}

async fn send(method: reqwest::Method, server: &Server, path: &str, body: Value) -> u16 {
    let r = reqwest::Client::new()
        .request(method, server.url(path))
        .json(&body)
        .send()
        .await
        .unwrap();
    r.status().as_u16()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_an_agent_changed_on_one_instance_runs_changed_on_the_other() {
    run_on(Backend::Postgres, |db_url| async move {
        let llm = FakeOpenAi::start().await.unwrap();
        llm.set_default(FakeReply::text("done"));
        let cluster = Cluster::start(2, &db_url, &llm.base_url(), &[]).await;
        let (a, b) = (cluster.at(0), cluster.at(1));
        let agent = |prompt: &str| json!({"name": "writer", "system_prompt": prompt});
        assert_eq!(
            send(reqwest::Method::POST, a, "/api/agents", agent("First.")).await,
            201
        );
        assert!(chat_prompt(b, &llm).await.contains("First."));
        let put = send(
            reqwest::Method::PUT,
            a,
            "/api/agents/writer",
            agent("Second."),
        )
        .await;
        assert_eq!(put, 200);
        assert!(chat_prompt(b, &llm).await.contains("Second."), "no restart");
        let shown = b.get_json("/api/agents/writer").await;
        assert_eq!(shown["version"], 2);
        assert_eq!(
            send(reqwest::Method::DELETE, a, "/api/agents/writer", json!({})).await,
            204
        );
        let r = send(
            reqwest::Method::POST,
            b,
            "/api/conversations",
            json!({"agent": "writer"}),
        );
        assert_eq!(r.await, 404, "deleted for the other instance too");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_an_api_agents_run_taken_over_keeps_its_version() {
    run_on(Backend::Postgres, |db_url| async move {
        let llm = FakeOpenAi::start().await.unwrap();
        llm.set_default(FakeReply::text("done"));
        let mut cluster = Cluster::start(3, &db_url, &llm.base_url(), &LEASE_ENV).await;
        let agent = |prompt: &str| json!({"name": "writer", "system_prompt": prompt});
        let a = cluster.at(0);
        assert_eq!(
            send(reqwest::Method::POST, a, "/api/agents", agent("First.")).await,
            201
        );
        // One tool call, then a model call that is still in flight when the owner dies.
        let call = (
            "call_1",
            "calculator",
            r#"{"expression": "6*7"}"#.to_string(),
        );
        llm.push(FakeReply::tool_calls(vec![call]));
        llm.push(FakeReply::text("never seen").delay(30_000));
        let r = reqwest::Client::new()
            .post(a.url("/api/chat"))
            .json(&json!({"query": "six times seven", "agent": "writer"}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        let run = run_id_of(r).await;
        crate::support::eventually("the second model call is in flight", || async {
            llm.requests().len() >= 2
        })
        .await;
        // Its stream was dropped, so the run is written on the writer's tick: the kill must
        // come after the checkpoint with the tool call, or there is nothing to resume from.
        let store = Store::connect(&db_url).await.unwrap();
        crate::support::eventually("the checkpoint after the tool call stored", || async {
            let stored = store.run_checkpoint(run).await.unwrap().unwrap_or_default();
            stored.contains("\"tool_calls\":1")
        })
        .await;
        let put = send(
            reqwest::Method::PUT,
            cluster.at(1),
            "/api/agents/writer",
            agent("Second."),
        );
        assert_eq!(put.await, 200);
        cluster.servers[0].kill9().await;
        let (taker, _) = taken_over(&store, run, "a").await;
        let taker_at = if taker == "b" { 1 } else { 2 };
        let events = replay(cluster.at(taker_at), run).await;
        let done = &events.last().unwrap().data;
        assert_eq!(done["status"], "completed", "{done}");
        let requests = llm.requests();
        let last = requests.last().unwrap()["messages"][0]["content"].to_string();
        assert!(requests.len() >= 3, "the taker called the model again");
        assert!(last.contains("First."), "the recorded version: {last}");
        assert!(!last.contains("Second."), "{last}");
        store.close().await;
    })
    .await;
}

/// The run id from the first event of a `/api/chat` stream (`start`), leaving the rest unread.
async fn run_id_of(mut r: reqwest::Response) -> Uuid {
    let mut text = String::new();
    while let Some(chunk) = r.chunk().await.unwrap() {
        text.push_str(&String::from_utf8_lossy(&chunk));
        if let Some(id) = text
            .split("\"run_id\":\"")
            .nth(1)
            .and_then(|rest| rest.get(..36))
        {
            return Uuid::parse_str(id).unwrap();
        }
    }
    panic!("no run id in {text}");
}
