//! Integration tests of the network tools against local axum servers (127.0.0.1:0 and
//! 127.0.0.2:0, never the internet): the SSRF guard of `http_request` (literals, names,
//! redirects), its response cap, and HTTP tools from `[[tools.http]]`.
//!
//! Addresses such as 10.0.0.1 and 169.254.169.254 appear only as targets the guard must refuse
//! before any connection is attempted.

use std::collections::BTreeMap;
use std::time::Duration;

use axum::extract::{Query, RawQuery};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::routing::{any, get, post};
use axum::Router;
use reagent::tools::http_request::{HttpRequestOptions, HttpRequestTool};
use reagent::tools::http_tool::{HttpTool, HttpToolSpec};
use reagent::tools::ssrf::SsrfPolicy;
use reagent::tools::{Tool, ToolError, ToolSource};
use serde_json::{json, Value};

use crate::support::target::Target as Server;

async fn redirect(Query(q): Query<BTreeMap<String, String>>) -> impl IntoResponse {
    let to = q.get("to").cloned().unwrap_or_default();
    (StatusCode::FOUND, [(header::LOCATION, to)])
}

async fn echo(headers: HeaderMap, RawQuery(query): RawQuery, body: String) -> Json2 {
    let h = |n: &str| {
        headers
            .get(n)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string()
    };
    Json2(json!({
        "query": query,
        "body": body,
        "x_api_key": h("x-api-key"),
        "content_type": h("content-type"),
    }))
}

/// JSON response without depending on axum's `json` feature flags.
struct Json2(Value);
impl IntoResponse for Json2 {
    fn into_response(self) -> axum::response::Response {
        (
            [(header::CONTENT_TYPE, "application/json")],
            self.0.to_string(),
        )
            .into_response()
    }
}

async fn serve(ip: &str) -> Server {
    let app = Router::new()
        .route("/hello", get(|| async { "hello" }))
        .route("/redirect", get(redirect))
        .route(
            "/loop",
            get(|| async { (StatusCode::FOUND, [(header::LOCATION, "/loop")]) }),
        )
        .route("/big", get(|| async { "x".repeat(10_000) }))
        .route(
            "/missing",
            get(|| async { (StatusCode::NOT_FOUND, "no such thing") }),
        )
        .route("/echo", any(echo))
        .route(
            "/boom",
            post(|| async { (StatusCode::INTERNAL_SERVER_ERROR, "boom: db down") }),
        )
        .route(
            "/report",
            post(|| async {
                (
                    [
                        (header::CONTENT_TYPE, "text/html; charset=utf-8"),
                        (
                            header::CONTENT_DISPOSITION,
                            "attachment; filename=\"report.html\"",
                        ),
                    ],
                    "<h1>Report</h1>",
                )
            }),
        )
        .route(
            "/notes",
            post(|| async { ([(header::CONTENT_TYPE, "text/markdown")], "# Notes") }),
        )
        .route("/hang", post(std::future::pending::<&'static str>));
    Server::serve(ip, app).await
}

fn tool(policy: SsrfPolicy, max_response_bytes: usize) -> HttpRequestTool {
    HttpRequestTool::new(HttpRequestOptions {
        policy,
        max_response_bytes,
        timeout: Duration::from_secs(10),
    })
}

fn allowing(server: &Server) -> SsrfPolicy {
    SsrfPolicy {
        allow_private: false,
        allowed_hosts: vec![server.addr.to_string()],
    }
}

fn assert_refused(result: Result<reagent::tools::ToolOutput, ToolError>, what: &str) {
    match result {
        Err(ToolError::Refused(m)) => assert!(m.contains("private/loopback"), "{what}: {m}"),
        other => panic!("{what}: expected Refused, got {other:?}"),
    }
}

#[tokio::test]
async fn private_and_loopback_targets_are_refused_before_connecting() {
    let server = serve("127.0.0.1").await;
    let t = tool(SsrfPolicy::default(), 1 << 20);
    let port = server.addr.port();
    for url in [
        server.url("/hello"),
        format!("http://localhost:{port}/hello"),
        format!("http://[::1]:{port}/hello"),
        "http://10.0.0.1/".to_string(),
        "http://169.254.169.254/latest/meta-data/".to_string(),
    ] {
        assert_refused(t.call(json!({"url": url})).await, &url);
    }
    assert_eq!(server.hits(), 0, "the local server must never be contacted");
}

#[tokio::test]
async fn allowed_host_is_reachable_and_statuses_are_observations() {
    let server = serve("127.0.0.1").await;
    let t = tool(allowing(&server), 1 << 20);
    let out = t.call(json!({"url": server.url("/hello")})).await.unwrap();
    assert_eq!(out.content, "HTTP 200\nhello");
    let missing = t
        .call(json!({"url": server.url("/missing")}))
        .await
        .unwrap();
    assert_eq!(missing.content, "HTTP 404\nno such thing");
    let posted = t
        .call(json!({"url": server.url("/echo"), "method": "POST",
            "headers": {"X-Api-Key": "k1"}, "body": "payload"}))
        .await
        .unwrap();
    let echoed: Value =
        serde_json::from_str(posted.content.trim_start_matches("HTTP 200\n")).unwrap();
    assert_eq!(echoed["body"], "payload");
    assert_eq!(echoed["x_api_key"], "k1");
    assert!(t.writes(), "http_request can change the world");
}

#[tokio::test]
async fn same_host_redirects_are_followed_and_loops_stop() {
    let server = serve("127.0.0.1").await;
    let t = tool(allowing(&server), 1 << 20);
    let out = t
        .call(json!({"url": server.url("/redirect?to=/hello")}))
        .await
        .unwrap();
    assert_eq!(out.content, "HTTP 200\nhello");
    let hits_before = server.hits();
    match t.call(json!({"url": server.url("/loop")})).await {
        Err(ToolError::Failed(m)) => assert!(m.contains("redirects"), "{m}"),
        other => panic!("expected Failed, got {other:?}"),
    }
    assert_eq!(
        server.hits() - hits_before,
        6,
        "first request plus five redirects"
    );
}

#[tokio::test]
async fn redirects_to_forbidden_addresses_are_refused() {
    let server = serve("127.0.0.1").await;
    let neighbour = serve("127.0.0.2").await;
    let t = tool(allowing(&server), 1 << 20);
    for target in [
        neighbour.url("/hello"),
        "http://169.254.169.254/latest/meta-data/".to_string(),
        "http://10.0.0.1/admin".to_string(),
        format!("http://localhost:{}/hello", server.addr.port()),
    ] {
        let url = server.url(&format!("/redirect?to={target}"));
        assert_refused(t.call(json!({"url": url})).await, &target);
    }
    assert_eq!(neighbour.hits(), 0, "127.0.0.2 must never be contacted");
    assert_eq!(
        server.hits(),
        4,
        "only the redirecting hops reached the allowed server"
    );
}

#[tokio::test]
async fn response_is_cut_at_the_cap() {
    let server = serve("127.0.0.1").await;
    let t = tool(allowing(&server), 100);
    let out = t.call(json!({"url": server.url("/big")})).await.unwrap();
    let (status, rest) = out.content.split_once('\n').unwrap();
    assert_eq!(status, "HTTP 200");
    let body: String = rest.chars().take_while(|c| *c == 'x').collect();
    assert_eq!(body.len(), 100);
    assert!(rest.contains("truncated"), "{rest}");
}

#[tokio::test]
async fn allow_private_lets_loopback_through() {
    let server = serve("127.0.0.1").await;
    let policy = SsrfPolicy {
        allow_private: true,
        allowed_hosts: vec![],
    };
    let t = tool(policy, 1 << 20);
    let url = format!("http://localhost:{}/hello", server.addr.port());
    assert_eq!(
        t.call(json!({"url": url})).await.unwrap().content,
        "HTTP 200\nhello"
    );
    assert_eq!(server.hits(), 1);
}

fn http_tool(server: &Server, path: &str, method: &str, timeout_s: u64) -> HttpTool {
    let spec = HttpToolSpec {
        name: "lookup".into(),
        description: "test tool".into(),
        parameters: json!({"type": "object", "properties": {"q": {"type": "string"}}}),
        url: server.url(path),
        method: method.into(),
        headers: BTreeMap::from([("X-Api-Key".to_string(), "secret".to_string())]),
        timeout_s,
        writes: true,
        requires_approval: true,
        idempotent: false,
    };
    HttpTool::new(spec, reqwest::Client::new()).unwrap()
}

#[tokio::test]
async fn http_tool_posts_json_with_its_headers() {
    let server = serve("127.0.0.1").await;
    let t = http_tool(&server, "/echo", "POST", 5);
    assert_eq!(
        (t.source(), t.writes(), t.requires_approval()),
        (ToolSource::Http, true, true)
    );
    let out = t.call(json!({"q": "rust", "n": 3})).await.unwrap();
    let echoed: Value = serde_json::from_str(&out.content).unwrap();
    let body: Value = serde_json::from_str(echoed["body"].as_str().unwrap()).unwrap();
    assert_eq!(body, json!({"q": "rust", "n": 3}));
    assert_eq!(echoed["x_api_key"], "secret");
    assert_eq!(echoed["content_type"], "application/json");
    assert!(out.artifacts.is_empty());
}

#[tokio::test]
async fn http_tool_get_sends_a_query_string() {
    let server = serve("127.0.0.1").await;
    let t = http_tool(&server, "/echo", "GET", 5);
    let out = t.call(json!({"q": "a b&c", "n": 3})).await.unwrap();
    let echoed: Value = serde_json::from_str(&out.content).unwrap();
    let mut pairs: Vec<&str> = echoed["query"].as_str().unwrap().split('&').collect();
    pairs.sort();
    assert_eq!(pairs, ["n=3", "q=a+b%26c"]);
    assert_eq!(echoed["body"], "");
    assert_eq!(echoed["x_api_key"], "secret");
}

#[tokio::test]
async fn http_tool_error_status_is_an_error() {
    let server = serve("127.0.0.1").await;
    let t = http_tool(&server, "/boom", "POST", 5);
    assert_eq!(
        t.call(json!({})).await,
        Err(ToolError::Failed("HTTP 500: boom: db down".into()))
    );
}

#[tokio::test]
async fn http_tool_documents_become_artifacts() {
    let server = serve("127.0.0.1").await;
    let html = http_tool(&server, "/report", "POST", 5)
        .call(json!({}))
        .await
        .unwrap();
    assert_eq!(html.artifacts.len(), 1);
    assert_eq!(html.artifacts[0].name, "report.html");
    assert_eq!(html.artifacts[0].mime_type, "text/html");
    assert_eq!(html.artifacts[0].data, b"<h1>Report</h1>");
    assert!(
        !html.content.contains("<h1>"),
        "the LLM never sees the document"
    );

    let md = http_tool(&server, "/notes", "POST", 5)
        .call(json!({}))
        .await
        .unwrap();
    assert_eq!(md.artifacts[0].name, "lookup.md");
    assert_eq!(md.artifacts[0].mime_type, "text/markdown");
}

#[tokio::test]
async fn http_tool_times_out() {
    let server = serve("127.0.0.1").await;
    let t = http_tool(&server, "/hang", "POST", 1);
    let started = std::time::Instant::now();
    match t.call(json!({})).await {
        Err(ToolError::Failed(m)) => assert!(m.contains("timed out"), "{m}"),
        other => panic!("expected a timeout, got {other:?}"),
    }
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(server.hits(), 1);
}
