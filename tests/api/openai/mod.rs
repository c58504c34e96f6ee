//! The OpenAI-compatible API (docs/protocols.md) through the real router: `clients` drives it with the
//! official `openai` Python SDK and npm package (real peers, `scripts/peers.sh`), `edges` covers
//! a dropped stream, another tenant's conversation and bad input with plain HTTP; `responses` the
//! Responses API with the Python SDK and plain HTTP, `responses_npm` with the npm package;
//! `agents_sdk` the OpenAI Agents SDK with a reagent agent as its model; `previous` concurrent
//! responses after one `previous_response_id`; `tenant_agents` a tenant's own agents as models.

mod agents_sdk;
mod clients;
mod edges;
mod images;
mod previous;
mod responses;
mod responses_npm;
mod responses_schema;
mod tenant_agents;
mod tools;

use serde_json::Value;

use crate::support::app::{Options, TestApp};

pub const ALICE: &str = "ka-secret-1";
pub const BOB: &str = "kb-secret-2";

/// Two agents on the scripted model; alice's and bob's keys; alice's key as the default.
pub async fn agents_app() -> TestApp {
    let mut app = TestApp::with(Options {
        env: vec![("REAGENT_API_KEYS", format!("alice:{ALICE},bob:{BOB}"))],
        toml: r#"
[[models]]
name = "scripted"

[[agents]]
name = "helper"
model = "scripted"
system_prompt = "You are helpful."
tools = ["ech*"]
description = "Echoes things"

[[agents]]
name = "second"
tools = []
max_iterations = 3
"#
        .into(),
        // A dropped client is noticed when a write fails: keep-alives make that quick.
        keep_alive: std::time::Duration::from_millis(200),
        ..Options::default()
    })
    .await;
    app.key = Some(ALICE.into());
    app
}

/// The stored messages of a conversation, as `(role, kind, content, run_id)`.
pub async fn messages(app: &TestApp, conversation: &str) -> Vec<(String, String, String, Value)> {
    let r = app
        .get(&format!("/api/conversations/{conversation}"), None)
        .await;
    assert_eq!(r.status(), 200);
    let body: Value = r.json().await.unwrap();
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap().to_string(),
                m["kind"].as_str().unwrap().to_string(),
                m["content"].as_str().unwrap().to_string(),
                m["run_id"].clone(),
            )
        })
        .collect()
}

/// The stored answer of a run.
pub async fn answer_of(app: &TestApp, conversation: &str, run: &str) -> String {
    messages(app, conversation)
        .await
        .into_iter()
        .find(|(role, _, _, run_id)| role == "assistant" && run_id == run)
        .map(|(_, _, content, _)| content)
        .expect("the run's answer is stored")
}

pub async fn run_json(app: &TestApp, run: &str) -> Value {
    let r = app.get(&format!("/api/runs/{run}"), None).await;
    assert_eq!(r.status(), 200);
    r.json().await.unwrap()
}

/// `usage` of a run as the OpenAI clients report it.
pub fn openai_usage(run: &Value) -> Value {
    serde_json::json!({
        "prompt_tokens": run["usage"]["prompt_tokens"],
        "completion_tokens": run["usage"]["completion_tokens"],
        "total_tokens": run["usage"]["total_tokens"],
    })
}
