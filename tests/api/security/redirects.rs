//! Operator-declared endpoints and redirects: an HTTP tool's and an MCP server's configured
//! headers (API keys) must never reach another origin. Two local servers: origin A redirects,
//! origin B records every header it is sent. Redirects within A are still followed.

use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use axum::Router;
use reagent::testing::scripted::ScriptedLlm;

use super::*;
use crate::support::sse::Sse;

/// The headers of every request origin B received.
type Seen = Arc<Mutex<Vec<HeaderMap>>>;

async fn serve(router: Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await });
    addr
}

/// Origin B: records and answers 200 "reached B".
async fn origin_b() -> (SocketAddr, Seen) {
    let seen = Seen::default();
    let router = Router::new()
        .fallback(any(
            |State(seen): State<Seen>, headers: HeaderMap| async move {
                seen.lock().unwrap().push(headers);
                "reached B"
            },
        ))
        .with_state(seen.clone());
    (serve(router).await, seen)
}

fn redirect(status: StatusCode, to: String) -> Response {
    (status, [("location", to)]).into_response()
}

/// Origin A: `/tool` and `/mcp` redirect to B (302 and 307), `/same` to A's own `/final`,
/// which answers with the `X-Api-Key` it received.
async fn origin_a(b: SocketAddr) -> SocketAddr {
    let router = Router::new()
        .route(
            "/tool",
            any(move || async move { redirect(StatusCode::FOUND, format!("http://{b}/tool")) }),
        )
        .route(
            "/mcp",
            any(move || async move {
                redirect(StatusCode::TEMPORARY_REDIRECT, format!("http://{b}/mcp"))
            }),
        )
        .route(
            "/same",
            any(|| async { redirect(StatusCode::FOUND, "/final".into()) }),
        )
        .route(
            "/final",
            any(|headers: HeaderMap| async move {
                let key = headers.get("x-api-key").and_then(|v| v.to_str().ok());
                format!("final got {}", key.unwrap_or("nothing"))
            }),
        );
    serve(router).await
}

fn http_tool(name: &str, url: String) -> String {
    format!(
        "[[tools.http]]\nname = \"{name}\"\ndescription = \"d\"\nurl = {url:?}\nmethod = \"GET\"\n\
         headers = {{ X-Api-Key = \"key-4a7f\" }}\n\n"
    )
}

fn tool_end<'a>(events: &'a [Sse], call_id: &str) -> &'a Value {
    events
        .iter()
        .find(|e| e.label() == "step:tool_end" && e.data["call_id"] == call_id)
        .map(|e| &e.data)
        .unwrap_or_else(|| panic!("no tool_end for {call_id}"))
}

#[tokio::test]
async fn an_http_tools_configured_headers_never_follow_a_redirect_to_another_origin() {
    let (b, seen) = origin_b().await;
    let a = origin_a(b).await;
    let llm = ScriptedLlm::native();
    llm.tool_calls(&[("c1", "moved", "{}"), ("c2", "same", "{}")]);
    llm.text("done");
    let app = TestApp::with(Options {
        llm,
        toml: format!(
            "{}{}",
            http_tool("moved", format!("http://{a}/tool")),
            http_tool("same", format!("http://{a}/same"))
        ),
        config_tools: true,
        env: vec![
            ("REACT_COMPLETION_CHECK_MIN_TOOLS", "100".into()),
            ("REACT_TOOL_SELECTION_THRESHOLD", "100".into()),
        ],
        ..Options::default()
    })
    .await;
    let conv = app.create_conversation(None).await;
    let run = app.start_run(&conv, json!({"query": "go"}), None).await;
    let events = app.events(&run, None).await;
    let moved = tool_end(&events, "c1");
    assert_eq!(moved["error"], true, "{moved}");
    assert!(
        moved["observation"]
            .as_str()
            .unwrap()
            .contains("another origin"),
        "{moved}"
    );
    assert!(
        seen.lock().unwrap().is_empty(),
        "origin B was sent {:?}",
        seen.lock().unwrap()
    );
    let same = tool_end(&events, "c2");
    assert_eq!(same["error"], false, "{same}");
    assert_eq!(same["observation"], "final got key-4a7f", "{same}");
    app.stop().await;
}

#[tokio::test]
async fn an_mcp_servers_configured_headers_never_follow_a_redirect_to_another_origin() {
    let (b, seen) = origin_b().await;
    let a = origin_a(b).await;
    let app = TestApp::with(Options {
        toml: format!(
            "[[mcp]]\nname = \"web\"\nurl = \"http://{a}/mcp\"\nheaders = {{ X-Secret = \"mcp-secret-81c2\" }}\n"
        ),
        ..Options::default()
    })
    .await;
    let all = app.get_json("/api/mcp", None).await;
    let web = &all[0];
    assert_ne!(web["state"], "ready", "{web}");
    let sent = seen.lock().unwrap().clone();
    assert!(
        sent.iter().all(|h| h.get("x-secret").is_none()),
        "origin B got the secret header: {sent:?}"
    );
    let error = web["last_error"].as_str().unwrap_or_default();
    assert!(
        error.contains("redirect") && error.contains("another origin"),
        "{web}"
    );
    app.stop().await;
}
