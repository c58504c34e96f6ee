//! The edges of `/v1` with plain HTTP: a client that drops its stream cancels the run, another
//! tenant cannot continue a conversation, bad input is a 4xx in OpenAI's shape with nothing
//! stored; and agents on `/api` (`GET /api/agents`, conversations created with `agent`).

use futures::StreamExt;
use serde_json::{json, Value};

use super::{agents_app, messages, run_json, BOB};
use crate::support::app::{Options, TestApp};
use crate::support::eventually;

async fn completions(app: &TestApp, body: Value, key: Option<&str>) -> reqwest::Response {
    app.post("/v1/chat/completions", body, key).await
}

/// Checks OpenAI's error shape and returns `error.code`.
async fn openai_error(r: reqwest::Response, status: u16) -> String {
    assert_eq!(r.status(), status);
    let body: Value = r.json().await.unwrap();
    let e = &body["error"];
    assert!(!e["message"].as_str().unwrap().is_empty(), "{body}");
    assert!(e["type"].is_string(), "{body}");
    assert!(e.as_object().unwrap().contains_key("param"), "{body}");
    e["code"].as_str().unwrap().to_string()
}

fn user(content: &str) -> Value {
    json!({"model": "helper", "messages": [{"role": "user", "content": content}]})
}

async fn conversation_count(app: &TestApp, key: Option<&str>) -> usize {
    let r = app.get("/api/conversations", key).await;
    assert_eq!(r.status(), 200);
    let body: Value = r.json().await.unwrap();
    body["items"].as_array().unwrap().len()
}

#[tokio::test]
async fn a_client_that_drops_the_stream_cancels_its_run() {
    let app = agents_app().await;
    app.llm.tool_calls(&[("c1", "gate", "{}")]);
    // A conversation of the `/api` (the `helper` agent with the `gate` tool), continued
    // through `/v1` under its agent's name.
    let conv = app
        .post(
            "/api/conversations",
            json!({"title": "t", "agent": "helper", "tools": ["gate"]}),
            None,
        )
        .await
        .json::<Value>()
        .await
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let r = app
        .client
        .post(app.url("/v1/chat/completions"))
        .bearer_auth(super::ALICE)
        .header("X-Reagent-Conversation-Id", &conv)
        .json(&json!({"model": "helper", "stream": true,
                      "messages": [{"role": "user", "content": "wait for the gate"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let run = r.headers()["x-reagent-run-id"]
        .to_str()
        .unwrap()
        .to_string();
    let mut body = r.bytes_stream();
    let mut seen = String::new();
    // The tool call as a reasoning line, then keep-alive comments while the tool runs.
    while !(seen.contains("→ gate") && seen.contains("\n: keep-alive\n")) {
        let chunk = body.next().await.expect("the stream stays open").unwrap();
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    assert!(seen.starts_with("data: {"), "{seen}");
    drop(body);
    let stored = eventually("the run is cancelled", || async {
        let run = run_json(&app, &run).await;
        (run["status"] == "cancelled").then_some(run)
    })
    .await;
    assert!(stored["finished_at"].is_string());
    app.gate.release();
    // A valid history: the query and the run's (fallback) answer, and a complete event log.
    let turns = messages(&app, &conv).await;
    let kinds: Vec<(&str, &str)> = turns
        .iter()
        .map(|(r, k, _, _)| (r.as_str(), k.as_str()))
        .collect();
    assert_eq!(kinds, [("user", "query"), ("assistant", "answer")]);
    let events = app.events(&run, None).await;
    assert_eq!(events.last().unwrap().event, "done");
}

#[tokio::test]
async fn another_tenant_cannot_continue_a_conversation() {
    let app = agents_app().await;
    app.llm.text("brief");
    let r = completions(&app, user("mine"), None).await;
    assert_eq!(r.status(), 200);
    let conv = r.headers()["x-reagent-conversation-id"]
        .to_str()
        .unwrap()
        .to_string();
    let r = app
        .client
        .post(app.url("/v1/chat/completions"))
        .bearer_auth(BOB)
        .header("X-Reagent-Conversation-Id", &conv)
        .json(&user("let me in"))
        .send()
        .await
        .unwrap();
    assert_eq!(openai_error(r, 404).await, "conversation_not_found");
    for bad in ["not-a-uuid", &uuid::Uuid::new_v4().to_string()] {
        let r = app
            .client
            .post(app.url("/v1/chat/completions"))
            .bearer_auth(super::ALICE)
            .header("X-Reagent-Conversation-Id", bad)
            .json(&user("hello"))
            .send()
            .await
            .unwrap();
        assert_eq!(
            openai_error(r, 404).await,
            "conversation_not_found",
            "{bad}"
        );
    }
    assert_eq!(messages(&app, &conv).await.len(), 2);
    assert_eq!(conversation_count(&app, Some(BOB)).await, 0);
    assert_eq!(app.llm.chat_requests().len(), 1);
}

#[tokio::test]
async fn a_conversation_of_another_agent_is_refused_naming_both() {
    let app = agents_app().await;
    app.llm.text("brief").text("again");
    let r = completions(&app, user("mine"), None).await;
    assert_eq!(r.status(), 200);
    let conv = r.headers()["x-reagent-conversation-id"]
        .to_str()
        .unwrap()
        .to_string();
    let continue_as = |model: &str| {
        app.client
            .post(app.url("/v1/chat/completions"))
            .bearer_auth(super::ALICE)
            .header("X-Reagent-Conversation-Id", &conv)
            .json(&json!({"model": model, "messages": [{"role": "user", "content": "more"}]}))
            .send()
    };
    let r = continue_as("second").await.unwrap();
    assert_eq!(r.status(), 400);
    let body: Value = r.json().await.unwrap();
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("'helper'") && message.contains("'second'"),
        "{message}"
    );
    assert_eq!(body["error"]["param"], "model");
    assert_eq!(messages(&app, &conv).await.len(), 2, "nothing stored");
    assert_eq!(app.llm.chat_requests().len(), 1, "nothing ran");
    // Under its own agent's name it goes on, and the response names that agent.
    let r = continue_as("helper").await.unwrap();
    assert_eq!(r.status(), 200);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["model"], "helper");
    assert_eq!(messages(&app, &conv).await.len(), 4);
}

#[tokio::test]
async fn bad_input_is_a_4xx_in_openais_shape_and_stores_nothing() {
    let app = agents_app().await;
    let audio = json!({"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}});
    let cases: Vec<(&str, Value, u16, &str)> = vec![
        (
            "no messages",
            json!({"model": "helper"}),
            400,
            "invalid_request_error",
        ),
        (
            "empty messages",
            json!({"model": "helper", "messages": []}),
            400,
            "invalid_request_error",
        ),
        (
            "no model",
            json!({"messages": [{"role": "user", "content": "hi"}]}),
            400,
            "invalid_request_error",
        ),
        (
            "last not user",
            json!({"model": "helper", "messages": [
            {"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]}),
            400,
            "invalid_request_error",
        ),
        (
            "audio part",
            json!({"model": "helper", "messages": [
            {"role": "user", "content": [{"type": "text", "text": "hear"}, audio]}]}),
            400,
            "invalid_request_error",
        ),
        (
            "tool results naming no run",
            json!({"model": "helper", "messages": [
            {"role": "user", "content": "hi"}, {"role": "tool", "content": "x", "tool_call_id": "c"}]}),
            400,
            "invalid_request_error",
        ),
        (
            "content object",
            json!({"model": "helper", "messages": [{"role": "user", "content": {"a": 1}}]}),
            400,
            "invalid_request_error",
        ),
        (
            "n = 2",
            json!({"model": "helper", "n": 2, "messages": [{"role": "user", "content": "hi"}]}),
            400,
            "invalid_request_error",
        ),
        (
            "functions",
            json!({"model": "helper", "functions": [{"name": "f"}],
            "messages": [{"role": "user", "content": "hi"}]}),
            400,
            "invalid_request_error",
        ),
        (
            "blank query",
            json!({"model": "helper", "messages": [{"role": "user", "content": "  "}]}),
            400,
            "invalid_request_error",
        ),
        (
            "unknown model",
            json!({"model": "gpt-5", "messages": [{"role": "user", "content": "hi"}]}),
            404,
            "model_not_found",
        ),
        ("not an object", json!([1, 2]), 400, "invalid_request_error"),
    ];
    for (what, body, status, code) in cases {
        let r = completions(&app, body, None).await;
        assert_eq!(r.status(), status, "{what}");
        assert_eq!(openai_error(r, status).await, code, "{what}");
    }
    let r = app
        .client
        .post(app.url("/v1/chat/completions"))
        .bearer_auth(super::ALICE)
        .header("content-type", "application/json")
        .body("{\"model\": \"helper\", \"messages\": [")
        .send()
        .await
        .unwrap();
    assert_eq!(openai_error(r, 400).await, "invalid_request_error");
    // Over the limit of the routes that take images: 1 MiB and a run's images as base64.
    let huge = "x".repeat(29 * 1024 * 1024);
    let r = completions(&app, user(&huge), None).await;
    assert_eq!(openai_error(r, 413).await, "payload_too_large");
    assert_eq!(conversation_count(&app, None).await, 0);
    assert!(app.llm.requests().is_empty());
}

#[tokio::test]
async fn agents_are_listed_and_apply_to_api_conversations() {
    let app = agents_app().await;
    let r = app.get("/api/agents", None).await;
    assert_eq!(r.status(), 200);
    let agents: Value = r.json().await.unwrap();
    assert_eq!(agents[0]["name"], "helper");
    assert_eq!(agents[0]["model"], "scripted");
    assert_eq!(agents[0]["tools"], json!(["ech*"]));
    assert_eq!(agents[0]["description"], "Echoes things");
    assert_eq!(agents[1]["name"], "second");
    assert_eq!(agents[1]["max_iterations"], 3);
    assert!(
        agents[0].get("system_prompt").is_none(),
        "prompts stay on the server"
    );
    let r = app
        .post("/api/conversations", json!({"agent": "nobody"}), None)
        .await;
    assert_eq!(r.status(), 404, "an unknown agent, as another tenant's");
    let r = app
        .post("/api/conversations", json!({"agent": "helper"}), None)
        .await;
    assert_eq!(r.status(), 201);
    let conv: Value = r.json().await.unwrap();
    assert_eq!(conv["agent"], "helper");
    app.llm.text("ok");
    let run = app
        .start_run(conv["id"].as_str().unwrap(), json!({"query": "hi"}), None)
        .await;
    app.events(&run, None).await;
    let request = &app.llm.chat_requests()[0];
    let tools: Vec<&str> = request.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(tools, ["echo"], "the agent's globs select the tools");
    let sent = serde_json::to_string(&request.messages).unwrap();
    assert!(sent.contains("You are helpful."), "{sent}");
}

#[tokio::test]
async fn api_chat_takes_an_agent_like_conversations_do() {
    let app = agents_app().await;
    let r = app
        .post("/api/chat", json!({"query": "hi", "agent": "nobody"}), None)
        .await;
    assert_eq!(r.status(), 404);
    let body: Value = r.json().await.unwrap();
    assert!(
        body.to_string().contains("unknown agent 'nobody'"),
        "{body}"
    );
    assert_eq!(conversation_count(&app, None).await, 0, "nothing stored");

    app.llm.text("ok");
    let r = app
        .post("/api/chat", json!({"query": "hi", "agent": "helper"}), None)
        .await;
    assert_eq!(r.status(), 200);
    let events = crate::support::sse::read_all(r).await;
    let conv = events[0].data["conversation_id"]
        .as_str()
        .unwrap()
        .to_string();
    let stored: Value = app
        .get(&format!("/api/conversations/{conv}"), None)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(stored["agent"], "helper");
    let request = &app.llm.chat_requests()[0];
    let tools: Vec<&str> = request.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(tools, ["echo"], "the agent's globs select the tools");
    let sent = serde_json::to_string(&request.messages).unwrap();
    assert!(sent.contains("You are helpful."), "{sent}");

    // A conversation keeps its own agent: naming another one for it is refused, not ignored;
    // naming its own is fine.
    let r = app
        .post(
            "/api/chat",
            json!({"query": "again", "conversation_id": conv, "agent": "second"}),
            None,
        )
        .await;
    assert_eq!(r.status(), 409);
    let text = r.text().await.unwrap();
    assert!(
        text.contains("'helper'") && text.contains("'second'"),
        "{text}"
    );
    app.llm.text("brief");
    let r = app
        .post(
            "/api/chat",
            json!({"query": "again", "conversation_id": conv, "agent": "helper"}),
            None,
        )
        .await;
    assert_eq!(r.status(), 200);
}

#[tokio::test]
async fn the_rate_limit_and_wrong_methods_answer_in_openais_shape() {
    let app = TestApp::with(Options {
        env: vec![("REAGENT_API_KEYS", format!("alice:{}", super::ALICE))],
        server_toml: "rate_limit_per_minute = 2".into(),
        ..Options::default()
    })
    .await;
    let r = app.post("/v1/models", json!({}), Some(super::ALICE)).await;
    assert_eq!(openai_error(r, 405).await, "method_not_allowed");
    let r = app.get("/v1/models", Some(super::ALICE)).await;
    assert_eq!(r.status(), 200);
    let models: Value = r.json().await.unwrap();
    assert_eq!(models["object"], "list");
    assert_eq!(
        models["data"],
        json!([{"id": "reagent", "object": "model", "created": models["data"][0]["created"], "owned_by": "reagent"}])
    );
    let r = app.get("/v1/models", Some(super::ALICE)).await;
    assert!(r.headers().get("retry-after").is_some());
    assert_eq!(openai_error(r, 429).await, "rate_limit_exceeded");
}

#[tokio::test]
async fn a_run_that_hits_the_agents_iteration_cap_finishes_with_length() {
    let app = agents_app().await;
    // `second` allows 3 iterations: three tool calls (different, so no cycle) use them up.
    for i in 0..3 {
        app.llm
            .tool_calls(&[("c", "echo", &format!(r#"{{"text":"{i}"}}"#))]);
    }
    let r = completions(
        &app,
        json!({"model": "second", "messages": [{"role": "user", "content": "go"}]}),
        None,
    )
    .await;
    assert_eq!(r.status(), 200);
    let run = r.headers()["x-reagent-run-id"]
        .to_str()
        .unwrap()
        .to_string();
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["choices"][0]["finish_reason"], "length", "{body}");
    let stored = run_json(&app, &run).await;
    assert_eq!(stored["status"], "max_iterations");
    assert_eq!(stored["iterations"], 3);
}
