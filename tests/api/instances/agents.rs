//! Agents managed at run time on two real instances (docs/api.md "Agents"): an agent made and
//! changed through one process is what the other's next run uses, with no restart.

use reagent::testing::fake_openai::{FakeOpenAi, FakeReply};
use serde_json::{json, Value};

use crate::support::backends::{run_on, Backend};
use crate::support::child::Server;
use crate::support::cluster::Cluster;
use crate::support::sse::read_all;

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
        assert_eq!(r.await, 400, "deleted for the other instance too");
    })
    .await;
}
