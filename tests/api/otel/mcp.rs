//! An MCP server over streamable HTTP (our own, in process, JSON responses) sees the
//! `traceparent` of the tool span on each `tools/call`, though rmcp sends the request from its
//! own worker task: the span context travels with the request.

use std::sync::{Arc, Mutex};

use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use reagent::testing::fake_openai::{FakeOpenAi, FakeReply};
use serde_json::{json, Value};

use super::{chat, event, traced, CALLER_TRACE};
use crate::support::otlp::{named, Collector};
use crate::support::target::Target;

/// The `traceparent` of every `tools/call` the server answered.
type Seen = Arc<Mutex<Vec<Option<String>>>>;

/// One JSON-RPC message in, its answer out (notifications get 202 and no body).
fn answer(message: &Value, headers: &HeaderMap, seen: &Seen) -> Response {
    let Some(id) = message.get("id").cloned() else {
        return StatusCode::ACCEPTED.into_response();
    };
    let result = match message["method"].as_str().unwrap_or_default() {
        "initialize" => json!({
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "traced", "version": "1.0.0"}}),
        "tools/list" => json!({"tools": [{"name": "hello", "description": "Says hello",
            "inputSchema": {"type": "object", "properties": {}}}]}),
        "tools/call" => {
            let tp = headers.get("traceparent").and_then(|v| v.to_str().ok());
            seen.lock().unwrap().push(tp.map(str::to_string));
            json!({"content": [{"type": "text", "text": "hello"}], "isError": false})
        }
        _ => json!({}),
    };
    Json(json!({"jsonrpc": "2.0", "id": id, "result": result})).into_response()
}

async fn serve(seen: Seen) -> Target {
    let routes = Router::new().route(
        "/mcp",
        post(move |headers: HeaderMap, Json(message): Json<Value>| {
            let seen = seen.clone();
            async move { answer(&message, &headers, &seen) }
        })
        // No server-to-client stream: the client goes on without one.
        .get(|| async { StatusCode::METHOD_NOT_ALLOWED })
        .delete(|| async { StatusCode::OK }),
    );
    Target::serve("127.0.0.1", routes).await
}

#[tokio::test]
async fn an_mcp_server_over_http_gets_the_tool_spans_traceparent() {
    let dir = tempfile::tempdir().unwrap();
    let seen = Seen::default();
    let target = serve(seen.clone()).await;
    let config = format!(
        "[[mcp]]\nname = \"traced\"\nurl = \"{}\"\nrequired = true\n",
        target.url("/mcp")
    );
    std::fs::write(dir.path().join("config.toml"), config).unwrap();
    let collector = Collector::start().await;
    let llm = FakeOpenAi::start().await.unwrap();
    llm.push(FakeReply::tool_calls(vec![(
        "call_1",
        "traced__hello",
        "{}",
    )]));
    llm.push(FakeReply::text("it said hello"));
    llm.set_default(FakeReply::text("Hello."));
    let server = traced(dir.path(), &llm, &collector.endpoint(), &[]).await;
    // reagent listens before it has reached its MCP servers; a run started earlier would not
    // have the tool. `required` makes /readyz wait for this one.
    crate::support::eventually("the MCP server ready", || async {
        reqwest::get(server.url("/readyz"))
            .await
            .is_ok_and(|r| r.status() == 200)
    })
    .await;

    let events = chat(&server, "say hello").await;
    let done = event(&events, "done");
    assert_eq!(done["status"], "completed", "{done}");
    let spans = collector
        .wait_for("the MCP tool's span", |s| {
            s.iter().any(|s| s.name == "execute_tool traced__hello")
        })
        .await;
    let tool = named(&spans, "execute_tool traced__hello");
    assert_eq!(tool.trace_id, CALLER_TRACE);
    assert_eq!(
        *seen.lock().unwrap(),
        vec![Some(format!("00-{CALLER_TRACE}-{}-01", tool.span_id))]
    );
}
