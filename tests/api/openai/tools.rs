//! Caller tools over `/v1/chat/completions` with the official `openai` clients, the Python SDK
//! (`tests/peers/openai_tools.py`) and the npm package (`openai_tools.mjs`): the client receives only its own tool's call
//! (`finish_reason: "tool_calls"`), runs its function, sends the result with the history and
//! gets the final answer — not streamed, then streamed. The agent's own tool in the same
//! response stays invisible to it.

use reagent::llm::Role;
use reagent::testing::scripted::Turn;
use serde_json::{json, Value};

use super::{agents_app, ALICE};
use crate::support::peers;

fn stream(text: &str) -> Turn {
    Turn::Stream(vec![text.to_string()], None)
}

fn assert_round_trip(seen: &Value, name: &str) {
    assert_eq!(
        seen["finish_reasons"],
        json!(["tool_calls", "stop"]),
        "{seen}"
    );
    let calls = seen["calls"].as_array().unwrap();
    assert_eq!(calls.len(), 1, "only the caller's tool reaches it: {seen}");
    assert_eq!(calls[0]["function"]["name"], "get_secret");
    let arguments: Value =
        serde_json::from_str(calls[0]["function"]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(arguments, json!({"name": name}));
}

#[tokio::test]
async fn the_python_sdk_runs_a_caller_tool_round_trip() {
    round_trip(peers::python(), "openai_tools.py").await;
}

#[tokio::test]
async fn the_npm_package_runs_a_caller_tool_round_trip() {
    peers::node_module("openai/package.json");
    round_trip("node".into(), "openai_tools.mjs").await;
}

/// Scripts two runs whose model calls `echo` (the agent's) and `get_secret` (the client's),
/// runs the peer and checks what it saw and what the continuations' model calls read.
async fn round_trip(program: std::path::PathBuf, script: &str) {
    let app = agents_app().await;
    for (ids, name) in [(["c1", "c2"], "ada"), (["c3", "c4"], "bob")] {
        let args = format!(r#"{{"name":"{name}"}}"#);
        app.llm.tool_calls(&[
            (ids[0], "echo", r#"{"text":"hi"}"#),
            (ids[1], "get_secret", &args),
        ]);
        app.llm.text("brief");
        app.llm
            .push_stream(stream(&format!("The secret of {name} is 42.")));
    }
    let out = tokio::process::Command::new(program)
        .arg(peers::dir().join(script))
        .args([app.url("/v1"), ALICE.to_string(), "helper".to_string()])
        .output()
        .await
        .expect("the peer starts");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{script} failed: {stderr}");
    let seen: Value = serde_json::from_slice(&out.stdout).unwrap();

    assert_round_trip(&seen["plain"], "ada");
    assert_eq!(seen["plain"]["answer"], "The secret of ada is 42.");
    assert_round_trip(&seen["streamed"], "bob");
    assert_eq!(seen["streamed"]["answer"], "The secret of bob is 42.");

    // Each continuation's model call reads the agent's own result and the client's.
    let requests = app.llm.chat_requests();
    let expected = [(1, "c1", "c2", "ada"), (3, "c3", "c4", "bob")];
    for (i, own, theirs, name) in expected {
        let results: Vec<(Option<&str>, &str)> = requests[i]
            .messages
            .iter()
            .filter(|m| m.role == Role::Tool)
            .map(|m| (m.tool_call_id.as_deref(), m.content.as_str()))
            .collect();
        let output = format!("the secret of {name} is 42");
        assert_eq!(
            results,
            [
                (Some(own), "echo: {\"text\":\"hi\"}"),
                (Some(theirs), output.as_str())
            ]
        );
    }
}

/// A client that keeps its own call ids finds the waiting run through the conversation header;
/// results for a run that no longer waits are a conflict.
#[tokio::test]
async fn the_conversation_header_finds_the_waiting_run() {
    let app = agents_app().await;
    app.llm
        .tool_calls(&[("c2", "get_secret", r#"{"name":"ada"}"#)]);
    app.llm.text("brief");
    let tools = json!([{"type": "function", "function": {"name": "get_secret"}}]);
    let ask = json!({"model": "helper", "tools": tools,
                     "messages": [{"role": "user", "content": "secret?"}]});
    let r = app.post("/v1/chat/completions", ask, None).await;
    assert_eq!(r.status(), 200);
    let conversation = r.headers()["x-reagent-conversation-id"]
        .to_str()
        .unwrap()
        .to_string();
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["choices"][0]["finish_reason"], "tool_calls");
    let answer = json!({"model": "helper", "tools": tools, "messages": [
        {"role": "user", "content": "secret?"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "c2", "type": "function",
            "function": {"name": "get_secret", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c2", "content": "42"}]});
    let send = || {
        app.client
            .post(app.url("/v1/chat/completions"))
            .bearer_auth(ALICE)
            .header("X-Reagent-Conversation-Id", &conversation)
            .json(&answer)
            .send()
    };
    let r = send().await.unwrap();
    assert_eq!(r.status(), 200);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["choices"][0]["finish_reason"], "stop", "{body}");
    let last = app.llm.chat_requests().pop().unwrap();
    let result = last.messages.last().unwrap();
    assert_eq!(
        (result.tool_call_id.as_deref(), result.content.as_str()),
        (Some("c2"), "42")
    );
    let r = send().await.unwrap();
    assert_eq!(r.status(), 409);
}
