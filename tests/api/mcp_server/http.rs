//! `/mcp` with plain HTTP.

use std::time::Duration;

use reagent::testing::scripted::{response, Turn};
use serde_json::{json, Value};

use super::{app, request, ALICE, BOB};
use crate::support::app::TestApp;
use crate::support::wait::eventually;

/// POSTs `body` to `/mcp` with `accept`; the response.
async fn post(app: &TestApp, body: Value, accept: &str, key: Option<&str>) -> reqwest::Response {
    let mut rb = app
        .client
        .post(app.url("/mcp"))
        .header("accept", accept)
        .json(&body);
    if let Some(key) = key.or(app.key.as_deref()) {
        rb = rb.bearer_auth(key);
    }
    rb.send().await.unwrap()
}

async fn call(app: &TestApp, body: Value) -> Value {
    let r = post(app, body, "application/json", None).await;
    assert_eq!(r.status(), 200);
    r.json().await.unwrap()
}

/// The messages of an event-stream response.
async fn messages(r: reqwest::Response) -> Vec<Value> {
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "text/event-stream");
    let body = r.text().await.unwrap();
    body.split("\n\n")
        .filter_map(|f| f.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

fn ask(id: u64, agent: &str, arguments: Value) -> Value {
    request(
        id,
        "tools/call",
        json!({"name": agent, "arguments": arguments}),
    )
}

#[tokio::test]
async fn the_handshake_lists_one_tool_per_agent() {
    let app = app().await;
    let init = json!({"protocolVersion": "2025-06-18", "capabilities": {},
                      "clientInfo": {"name": "t", "version": "1"}});
    let r = post(
        &app,
        request(1, "initialize", init),
        "application/json",
        None,
    )
    .await;
    assert_eq!(r.status(), 200);
    assert!(r.headers().contains_key("mcp-session-id"));
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["result"]["protocolVersion"], "2025-06-18");
    assert_eq!(
        body["result"]["capabilities"]["tools"]["listChanged"],
        false
    );
    // A version it does not speak: its newest.
    let init = json!({"protocolVersion": "1999-01-01", "capabilities": {}});
    let body = call(&app, request(2, "initialize", init)).await;
    assert_eq!(body["result"]["protocolVersion"], "2025-11-25");

    let body = call(&app, request(3, "ping", json!({}))).await;
    assert_eq!(body, json!({"jsonrpc": "2.0", "id": 3, "result": {}}));
    let body = call(&app, request(4, "tools/list", json!({}))).await;
    let tools = body["result"]["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["helper", "plan_ner"]);
    assert_eq!(tools[0]["description"], "Answers with the echo tool");
    assert_eq!(tools[0]["inputSchema"]["required"], json!(["query"]));
    assert!(tools[1]["description"]
        .as_str()
        .unwrap()
        .contains("plan.ner"));
}

#[tokio::test]
async fn a_call_is_a_run_and_its_conversation_goes_on() {
    let app = app().await;
    app.llm.text("brief").stream_text(&["hello"]);
    let body = call(&app, ask(7, "helper", json!({"query": "hi"}))).await;
    let result = &body["result"];
    assert_eq!(body["id"], 7);
    assert_eq!(result["isError"], false, "{body}");
    assert_eq!(result["content"][0]["text"], "hello");
    let s = &result["structuredContent"];
    assert_eq!(s["answer"], "hello");
    assert_eq!(s["status"], "completed");
    let run = s["run_id"].as_str().unwrap();
    let conversation = s["conversation_id"].as_str().unwrap();
    let stored: Value = app.get_json(&format!("/api/runs/{run}"), None).await;
    assert_eq!(stored["status"], "completed");

    app.llm.text("brief").stream_text(&["again"]);
    let args = json!({"query": "more", "conversation_id": conversation});
    let body = call(&app, ask(8, "helper", args.clone())).await;
    assert_eq!(
        body["result"]["structuredContent"]["conversation_id"],
        conversation
    );
    assert_eq!(body["result"]["content"][0]["text"], "again");
    // Another tenant's conversation is not found: a tool error, no run.
    let r = post(&app, ask(9, "helper", args), "application/json", Some(BOB)).await;
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["result"]["isError"], true, "{body}");
    assert_eq!(body["result"]["content"][0]["text"], "not found");
}

#[tokio::test]
async fn a_streamed_call_sends_a_progress_notification_per_step() {
    let app = app().await;
    app.llm.tool_calls(&[("c1", "echo", r#"{"text":"x"}"#)]);
    app.llm.text("brief").stream_text(&["echoed"]);
    let body = request(
        3,
        "tools/call",
        json!({"name": "helper", "arguments": {"query": "echo x"},
               "_meta": {"progressToken": "tok"}}),
    );
    let got = messages(post(&app, body, "application/json, text/event-stream", None).await).await;
    let (last, progress) = got.split_last().unwrap();
    assert_eq!(last["id"], 3);
    assert_eq!(last["result"]["content"][0]["text"], "echoed");
    assert!(progress.len() >= 2, "{got:?}");
    for (i, p) in progress.iter().enumerate() {
        assert_eq!(p["method"], "notifications/progress");
        assert_eq!(p["params"]["progressToken"], "tok");
        assert_eq!(p["params"]["progress"], i as u64 + 1);
    }
    assert!(
        progress
            .iter()
            .any(|p| p["params"]["message"] == "tool_start echo"),
        "{got:?}"
    );
    // No token, no notifications.
    app.llm.text("brief").stream_text(&["plain"]);
    let got = messages(
        post(
            &app,
            ask(4, "helper", json!({"query": "q"})),
            "text/event-stream, application/json",
            None,
        )
        .await,
    )
    .await;
    assert_eq!(got.len(), 1, "{got:?}");
}

#[tokio::test]
async fn a_failed_run_is_a_tool_error_with_its_sentence() {
    let app = app().await;
    app.llm.push(Turn::Fail(reagent::llm::LlmError::Status {
        status: 401,
        body: "bad key".into(),
    }));
    let body = call(&app, ask(1, "helper", json!({"query": "hi"}))).await;
    let result = &body["result"];
    assert_eq!(result["isError"], true, "{body}");
    assert!(!result["content"][0]["text"].as_str().unwrap().is_empty());
    assert_eq!(result["structuredContent"]["status"], "failed");
}

#[tokio::test]
async fn notifications_cancelled_stops_the_run() {
    let app = app().await;
    app.llm.push(Turn::Reply(
        response("late", vec![]),
        Duration::from_secs(3600),
    ));
    let session = "s-1";
    let started = {
        let rb = app
            .client
            .post(app.url("/mcp"))
            .header("accept", "application/json, text/event-stream")
            .header("mcp-session-id", session)
            .bearer_auth(super::ALICE)
            .json(&ask(5, "helper", json!({"query": "slow"})));
        tokio::spawn(rb.send())
    };
    eventually("the model was called", || async {
        app.llm.remaining() == 0
    })
    .await;
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                        "params": {"requestId": 5, "reason": "user"}});
    let r = app
        .client
        .post(app.url("/mcp"))
        .header("mcp-session-id", session)
        .bearer_auth(super::ALICE)
        .json(&cancel)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 202);
    let got = messages(started.await.unwrap().unwrap()).await;
    let result = &got.last().unwrap()["result"];
    assert_eq!(
        result["structuredContent"]["status"], "cancelled",
        "{got:?}"
    );
}

#[tokio::test]
async fn bad_requests_get_their_protocol_errors_never_a_500() {
    let app = app().await;
    let list = request(1, "tools/list", json!({}));
    let r = app
        .client
        .post(app.url("/mcp"))
        .json(&list)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    let r = app
        .client
        .post(app.url("/mcp"))
        .bearer_auth(super::ALICE)
        .header("origin", "https://evil.example")
        .json(&list)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    let r = app
        .client
        .post(app.url("/mcp"))
        .bearer_auth(super::ALICE)
        .header("origin", "https://ok.example")
        .json(&list)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);

    let r = app
        .client
        .post(app.url("/mcp"))
        .bearer_auth(super::ALICE)
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["code"], -32700);
    let r = post(&app, json!([list]), "application/json", None).await;
    assert_eq!(r.status(), 400);
    let r = post(
        &app,
        json!({"id": 1, "method": "ping"}),
        "application/json",
        None,
    )
    .await;
    assert_eq!(r.json::<Value>().await.unwrap()["error"]["code"], -32600);
    let body = call(&app, request(2, "resources/list", json!({}))).await;
    assert_eq!(body["error"]["code"], -32601);
    let body = call(&app, ask(3, "nobody", json!({"query": "hi"}))).await;
    assert_eq!(body["error"]["code"], -32602);
    let body = call(&app, ask(4, "helper", json!({}))).await;
    assert_eq!(body["error"]["code"], -32602);
    let body = call(
        &app,
        ask(5, "helper", json!({"query": "q", "conversation_id": "x"})),
    )
    .await;
    assert_eq!(body["error"]["code"], -32602);
    let r = app.get("/mcp", None).await;
    assert_eq!(r.status(), 405);
    let r = app.delete("/mcp", None).await;
    assert_eq!(r.status(), 204);
}

#[tokio::test]
async fn a_tenants_own_agents_are_its_tools_and_no_one_elses() {
    let app = app().await;
    let writer = json!({"name": "writer", "description": "Writes", "tools": ["echo"]});
    let r = app.post("/api/agents", writer, Some(ALICE)).await;
    assert_eq!(r.status(), 201);
    let names = |body: Value| -> Vec<String> {
        let tools = body["result"]["tools"].as_array().unwrap().clone();
        tools
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect()
    };
    let alices = call(&app, request(1, "tools/list", json!({}))).await;
    assert_eq!(names(alices), ["helper", "plan_ner", "writer"]);
    let r = post(
        &app,
        request(2, "tools/list", json!({})),
        "application/json",
        Some(BOB),
    )
    .await;
    assert_eq!(names(r.json().await.unwrap()), ["helper", "plan_ner"]);

    app.llm.text("brief").stream_text(&["written"]);
    let body = call(&app, ask(3, "writer", json!({"query": "write"}))).await;
    assert_eq!(body["result"]["isError"], false, "{body}");
    assert_eq!(body["result"]["content"][0]["text"], "written");
    // Bob cannot call it: the tool does not exist for him.
    let r = post(
        &app,
        ask(4, "writer", json!({"query": "x"})),
        "application/json",
        Some(BOB),
    )
    .await;
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["code"], -32602, "{body}");
}

#[tokio::test]
async fn a_page_may_call_back_the_server_that_served_it_on_a_loopback_name_only() {
    let app = app().await;
    let port = app.addr.port();
    let send = |host: String, origin: String| {
        app.client
            .post(app.url("/mcp"))
            .bearer_auth(ALICE)
            .header("host", host)
            .header("origin", origin)
            .json(&request(1, "ping", json!({})))
            .send()
    };
    for name in ["127.0.0.1", "localhost", "LOCALHOST"] {
        let r = send(format!("{name}:{port}"), format!("http://{name}:{port}")).await;
        assert_eq!(r.unwrap().status(), 200, "{name}");
    }
    // A DNS-rebound name: the page's origin is its own host too, but not a loopback name.
    let r = send(
        format!("evil.example:{port}"),
        format!("http://evil.example:{port}"),
    )
    .await;
    assert_eq!(r.unwrap().status(), 403);
    // Another local port's page.
    let r = send(format!("127.0.0.1:{port}"), "http://127.0.0.1:1".into()).await;
    assert_eq!(r.unwrap().status(), 403);
    let r = send(
        format!("127.0.0.1:{port}"),
        format!("http://localhost:{port}"),
    )
    .await;
    assert_eq!(r.unwrap().status(), 403);
}

#[tokio::test]
async fn agents_whose_names_map_to_one_tool_name_get_distinct_tools() {
    let app = app().await;
    // `plan.ner` is configured; alice adds `plan_ner` and `plan:ner`: all three map to `plan_ner`.
    for name in ["plan_ner", "plan:ner"] {
        let body = json!({"name": name, "tools": ["echo"]});
        let r = app.post("/api/agents", body, Some(ALICE)).await;
        assert_eq!(r.status(), 201, "{name}");
    }
    let listed = call(&app, request(1, "tools/list", json!({}))).await;
    let tools = listed["result"]["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names.len(), 4, "{names:?}");
    let unique: std::collections::HashSet<&&str> = names.iter().collect();
    assert_eq!(unique.len(), 4, "{names:?}");
    for name in &names {
        assert!(name.len() <= 64, "{name}");
        let ok = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
        assert!(name.chars().all(ok), "{name}");
    }
    // The agent named exactly `plan_ner` keeps the name; each tool runs its own agent, the
    // same tool names on the next list.
    assert!(names.contains(&"plan_ner"), "{names:?}");
    // `plan.ner`'s suffix, as docs/protocols.md shows it.
    assert!(names.contains(&"plan_ner_3597"), "{names:?}");
    let again = call(&app, request(2, "tools/list", json!({}))).await;
    assert_eq!(again["result"], listed["result"]);
    for (i, tool) in tools.iter().enumerate().skip(1) {
        app.llm.text("brief").stream_text(&["ok"]);
        let name = tool["name"].as_str().unwrap();
        let body = call(&app, ask(10 + i as u64, name, json!({"query": "q"}))).await;
        let conversation = body["result"]["structuredContent"]["conversation_id"]
            .as_str()
            .unwrap_or_else(|| panic!("{body}"))
            .to_string();
        let shown: Value = app
            .get_json(&format!("/api/conversations/{conversation}"), None)
            .await;
        let agent = shown["agent"].as_str().unwrap();
        assert_eq!(
            agent.replace(['.', ':'], "_"),
            name[..8],
            "{name} ran {agent}"
        );
        let described = tool["description"].as_str().unwrap();
        assert!(
            described.contains(agent),
            "{name}: {described} is not {agent}'s"
        );
    }
    // Bob sees only the configured `plan.ner`: no clash, the plain name.
    let r = post(
        &app,
        request(3, "tools/list", json!({})),
        "application/json",
        Some(BOB),
    )
    .await;
    let bobs: Value = r.json().await.unwrap();
    assert_eq!(bobs["result"]["tools"][1]["name"], "plan_ner");
}
