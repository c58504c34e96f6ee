//! Security properties of the HTTP service (SPEC §3.5, §3.7, §4) and of `http_request`'s SSRF
//! guard, attacked from outside through the real router (see `tests/support/app.rs`) or the real binary.
//!
//! - Auth, table-driven from `GET /api/openapi.json`: every operation refuses a missing or wrong
//!   key (401, error shape), another tenant's key gets 404 on every route that names a resource
//!   and sees none of them in lists; the document covers every route the router registers
//!   (read from `src/server/mod.rs`).
//! - Malformed ids on every route → 400/404, never 500; static files and artifacts cannot
//!   escape their directories (`..`, `%2e%2e`, `%2f`, backslashes, absolute paths), sent over a
//!   raw socket so no client normalises them first.
//! - CR/LF and control characters in queries and tool arguments never break SSE framing; tool
//!   supplied artifact names and types never inject headers.
//! - Limits: 413 on every body-taking route (sized and chunked), the 100 000-character bound,
//!   the per-key rate limit.
//! - The spawned binary at `RUST_LOG=debug`: no API key or LLM key ever appears in its log, and
//!   no request input can start a log line of its own.
//! - SSRF: names (from /etc/hosts), decimal/octal/hex and IPv6-embedded forms of loopback,
//!   and redirects to them, are refused before any connection.
//! - API keys are only ever compared through `constant_time_eq` (a scan of `src/`).

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use reagent::testing::fake_openai::{FakeOpenAi, FakeReply};
use reagent::tools::http_request::{HttpRequestOptions, HttpRequestTool};
use reagent::tools::ssrf::SsrfPolicy;
use reagent::tools::{Tool, ToolError, ToolOutput};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support::app::{error_code, Options, TestApp};
use crate::support::child::Server;
use crate::support::sse::read_until;
use crate::support::target::Target;
use crate::support::tools::{deploy, FakeTool};

/// Routes that need no API key (SPEC §3.5; `/metrics` has its own, absent here).
const PUBLIC: [&str; 4] = ["/healthz", "/readyz", "/metrics", "/api/instances"];

/// One operation of the OpenAPI document.
#[derive(Clone, Debug)]
struct Op {
    method: String,
    path: String,
    has_body: bool,
}

impl Op {
    fn is_public(&self) -> bool {
        PUBLIC.contains(&self.path.as_str())
    }
    fn has_path_params(&self) -> bool {
        self.path.contains('{')
    }
    /// A body the handler accepts, so that only auth or ownership can refuse the request.
    fn valid_body(&self) -> Value {
        if self.path.ends_with("/runs") || self.path == "/api/chat" {
            json!({"query": "hello"})
        } else if self.path.ends_with("/interrupt") {
            json!({"content": "more"})
        } else if self.path.starts_with("/api/approvals/") {
            json!({"approve": false, "reason": "no"})
        } else if self.method == "patch" {
            json!({"title": "renamed by someone"})
        } else {
            json!({})
        }
    }
}

async fn openapi(app: &TestApp) -> Value {
    let r = app.get("/api/openapi.json", None).await;
    assert_eq!(r.status(), 200);
    r.json().await.unwrap()
}

fn operations(doc: &Value) -> Vec<Op> {
    let mut ops = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            ops.push(Op {
                method: method.clone(),
                path: path.clone(),
                has_body: op.get("requestBody").is_some(),
            });
        }
    }
    assert!(ops.len() >= 20, "the document lists too few operations");
    ops
}

/// `path` with each `{param}` replaced by `values[param]`.
fn fill(path: &str, values: &BTreeMap<&str, String>) -> String {
    let mut out = path.to_string();
    for (name, value) in values {
        out = out.replace(&format!("{{{name}}}"), value);
    }
    assert!(!out.contains('{'), "no value for a parameter of {path}");
    out
}

async fn send(
    app: &TestApp,
    method: &str,
    path: &str,
    body: Option<Value>,
    auth: Option<&str>,
) -> reqwest::Response {
    let method = reqwest::Method::from_bytes(method.to_ascii_uppercase().as_bytes()).unwrap();
    let mut rb = app.client.request(method, app.url(path));
    if let Some(a) = auth {
        rb = rb.header("authorization", a);
    }
    if let Some(b) = body {
        rb = rb.json(&b);
    }
    rb.send().await.unwrap()
}

/// The `(method, path)` pairs the router registers, read from `src/server/mod.rs` (`api_routes`
/// are nested under `/api`): the test fails when a route is added without documenting it.
fn router_routes() -> BTreeSet<(String, String)> {
    let source =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/src/server/mod.rs")).unwrap();
    let api_start = source.find("fn api_routes").expect("fn api_routes");
    let router_start = source
        .find("pub fn router(state")
        .expect("pub fn router(state");
    assert!(api_start < router_start);
    // The OpenAI-compatible routes, nested under `/v1` (src/server/openai/mod.rs).
    let openai = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/src/server/openai/mod.rs"
    ))
    .unwrap();
    let openai_start = openai.find("pub fn routes(").expect("pub fn routes(");
    let mut routes = BTreeSet::new();
    for (block, prefix) in [
        (&source[api_start..router_start], "/api"),
        (&source[router_start..], ""),
        (&openai[openai_start..], "/v1"),
    ] {
        for segment in block.split(".route(").skip(1) {
            let path = segment.split('"').nth(1).expect("a quoted route path");
            // The segment ends at the next `.route(`; `.method_not_allowed_fallback` and layers
            // follow the last one and hold no method router.
            let segment = segment
                .split(".method_not_allowed_fallback")
                .next()
                .unwrap();
            let bytes = segment.as_bytes();
            for method in ["get", "post", "put", "patch", "delete"] {
                let needle = format!("{method}(");
                let found = segment.match_indices(&needle).any(|(i, _)| {
                    i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_')
                });
                if found {
                    routes.insert((method.to_string(), format!("{prefix}{path}")));
                }
            }
        }
    }
    assert!(
        routes.len() >= 20,
        "router parse found too few routes: {routes:?}"
    );
    routes
}

#[tokio::test]
async fn openapi_document_covers_exactly_the_router_routes() {
    let app = TestApp::spawn().await;
    let doc = openapi(&app).await;
    let documented: BTreeSet<(String, String)> = operations(&doc)
        .into_iter()
        .map(|op| (op.method, op.path))
        .collect();
    assert_eq!(router_routes(), documented);
    // Operation ids are unique (a generator keys clients by them).
    let ids: Vec<&str> = doc["paths"]
        .as_object()
        .unwrap()
        .values()
        .flat_map(|item| item.as_object().unwrap().values())
        .map(|op| op["operationId"].as_str().unwrap())
        .collect();
    let unique: BTreeSet<&&str> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len(), "duplicate operationId in {ids:?}");
    // Every /api operation declares the bearer scheme and documents 401; the public ones opt out.
    assert_eq!(doc["security"], json!([{"bearer": []}]));
    assert_eq!(
        doc["components"]["securitySchemes"]["bearer"]["scheme"],
        "bearer"
    );
    for item in doc["paths"].as_object().unwrap() {
        for (method, op) in item.1.as_object().unwrap() {
            if PUBLIC.contains(&item.0.as_str()) {
                assert_eq!(op["security"], json!([]), "{method} {}", item.0);
            } else {
                assert!(op["responses"].get("401").is_some(), "{method} {}", item.0);
                for p in op["parameters"].as_array().into_iter().flatten() {
                    let location = p["in"].as_str().unwrap();
                    assert!(
                        ["path", "query", "header"].contains(&location),
                        "{method} {}: {p}",
                        item.0
                    );
                    if p["name"] == "limit" || p["name"] == "before" || p["name"] == "after" {
                        assert_eq!(p["in"], "query", "{method} {}: {p}", item.0);
                    }
                }
            }
        }
    }
}

/// An app with alice's and bob's keys and the `deploy` tool (needs approval).
async fn two_tenants(server_toml: &str) -> (TestApp, Arc<FakeTool>) {
    let deploy = deploy();
    let app = TestApp::with(Options {
        env: vec![(
            "REAGENT_API_KEYS",
            "alice:ka-secret-1,bob:kb-secret-2".into(),
        )],
        server_toml: server_toml.into(),
        extra_tools: vec![deploy.clone()],
        ..Options::default()
    })
    .await;
    (app, deploy)
}

const ALICE: &str = "Bearer ka-secret-1";
const BOB: &str = "Bearer kb-secret-2";

#[tokio::test]
async fn every_api_route_refuses_missing_and_wrong_keys() {
    let (app, _) = two_tenants("").await;
    let doc: Value = send(&app, "get", "/api/openapi.json", None, Some(ALICE))
        .await
        .json()
        .await
        .unwrap();
    let ids: BTreeMap<&str, String> = [
        ("id", uuid::Uuid::new_v4().to_string()),
        ("run_id", uuid::Uuid::new_v4().to_string()),
        ("interrupt_id", uuid::Uuid::new_v4().to_string()),
    ]
    .into();
    let wrong = [
        None,
        Some("Bearer nope"),
        Some("Bearer ka-secret-"),   // a prefix of a real key
        Some("Bearer ka-secret-12"), // a real key plus one byte
        Some("Bearer KA-SECRET-1"),  // keys are case-sensitive
        Some("Basic ka-secret-1"),   // wrong scheme
        Some("ka-secret-1"),         // no scheme
        Some("Bearer"),
        Some("Bearer "),
        Some("Bearer ka-secret-1,kb-secret-2"),
    ];
    let mut checked = 0;
    for op in operations(&doc) {
        let path = fill(&op.path, &ids);
        let body = op.has_body.then(|| op.valid_body());
        if op.is_public() {
            let r = send(&app, &op.method, &path, body, None).await;
            assert_eq!(r.status(), 200, "{} {path} is public", op.method);
            continue;
        }
        for auth in wrong {
            let r = send(&app, &op.method, &path, body.clone(), auth).await;
            assert_eq!(
                r.headers()
                    .get("www-authenticate")
                    .map(|v| v.to_str().unwrap()),
                Some("Bearer"),
                "{} {path} with {auth:?}",
                op.method
            );
            // The OpenAI-compatible routes answer in OpenAI's shape (SPEC §10).
            let expected = if path.starts_with("/v1/") {
                "invalid_api_key"
            } else {
                "unauthorized"
            };
            let code = error_code(r, 401).await;
            assert_eq!(code, expected, "{} {path} with {auth:?}", op.method);
            checked += 1;
        }
    }
    assert!(
        checked >= 17 * wrong.len(),
        "only {checked} refusals checked"
    );
}

/// A tool that writes an artifact with a hostile name and type, for ownership checks.
fn evil_report() -> Arc<FakeTool> {
    FakeTool::text("evil_report", "written")
        .describe("Writes an artifact with a hostile name and type")
        .params(json!({"type": "object", "properties": {}}))
        .artifact(
            "a\r\nSet-Cookie: session=stolen\r\n\r\n<script>.html",
            "text/html\r\nSet-Cookie: session=stolen",
            b"<h1>hi</h1>",
        )
        .arc()
}

#[tokio::test]
async fn another_tenants_resources_are_404_on_every_route_and_stay_intact() {
    let deploy = deploy();
    let mut app = TestApp::with(Options {
        env: vec![(
            "REAGENT_API_KEYS",
            "alice:ka-secret-1,bob:kb-secret-2".into(),
        )],
        extra_tools: vec![deploy.clone(), evil_report()],
        ..Options::default()
    })
    .await;
    app.key = Some("ka-secret-1".into());
    // A finished run with an artifact.
    app.llm.tool_calls(&[("c1", "evil_report", "{}")]);
    app.llm.text("ok");
    let conv_done = app.create_conversation(None).await;
    let run_done = app.start_run(&conv_done, json!({"query": "q"}), None).await;
    let events = app.events(&run_done, None).await;
    let artifact_url = events
        .iter()
        .find(|e| e.label() == "step:tool_end")
        .unwrap()
        .data["artifacts"][0]["url"]
        .as_str()
        .unwrap()
        .to_string();
    let artifact_id = artifact_url.rsplit('/').next().unwrap().to_string();
    // A run waiting in a tool, with a pending interrupt.
    app.llm.tool_calls(&[("c2", "gate", "{}")]);
    let conv = app.create_conversation(None).await;
    let run = app.start_run(&conv, json!({"query": "q"}), None).await;
    app.wait_for(&run, |e| e.label() == "step:tool_start").await;
    let r = app.interrupt(&conv, "pending").await;
    assert_eq!(r.status(), 202);
    let interrupt_id = r.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    // A run waiting for an approval.
    app.llm.tool_calls(&[("c3", "deploy", r#"{"env":"prod"}"#)]);
    let conv_approval = app.create_conversation(None).await;
    let run_approval = app
        .start_run(&conv_approval, json!({"query": "q"}), None)
        .await;
    let step = app
        .wait_for(&run_approval, |e| e.label() == "step:approval_required")
        .await;
    let approval_id = step.last().unwrap().data["approval_id"]
        .as_str()
        .unwrap()
        .to_string();

    let doc = openapi(&app).await;
    let secrets = [
        conv.clone(),
        conv_done.clone(),
        conv_approval.clone(),
        run.clone(),
        run_done.clone(),
        run_approval.clone(),
        interrupt_id.clone(),
        approval_id.clone(),
        artifact_id.clone(),
    ];
    let mut checked = 0;
    for op in operations(&doc) {
        if op.is_public() {
            continue;
        }
        let id = if op.path.starts_with("/api/approvals/") {
            approval_id.clone()
        } else if op.path.starts_with("/api/artifacts/") {
            artifact_id.clone()
        } else {
            conv.clone()
        };
        let ids: BTreeMap<&str, String> = [
            ("id", id),
            ("run_id", run.clone()),
            ("interrupt_id", interrupt_id.clone()),
        ]
        .into();
        let path = fill(&op.path, &ids);
        let body = op.has_body.then(|| op.valid_body());
        let r = send(&app, &op.method, &path, body, Some(BOB)).await;
        if op.has_path_params() {
            assert_eq!(
                error_code(r, 404).await,
                "not_found",
                "bob: {} {path}",
                op.method
            );
        } else {
            // Lists and catalogs answer, but show none of alice's things.
            let status = r.status().as_u16();
            let text = r.text().await.unwrap();
            assert!(
                status == 200 || op.method == "post",
                "bob: {} {path} → {status} {text}",
                op.method
            );
            for s in &secrets {
                assert!(
                    !text.contains(s.as_str()),
                    "bob: {} {path} shows {s}",
                    op.method
                );
            }
        }
        checked += 1;
    }
    assert!(checked >= 16, "only {checked} operations checked");

    // Nothing bob did changed alice's state.
    let detail: Value = app
        .get(&format!("/api/conversations/{conv}"), None)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(detail["title"], "t", "bob renamed alice's conversation");
    assert_eq!(
        detail["active_run_id"],
        run.as_str(),
        "bob stopped alice's run"
    );
    let pending: Value = app.get("/api/approvals", None).await.json().await.unwrap();
    assert_eq!(
        pending[0]["id"],
        approval_id.as_str(),
        "bob decided alice's approval"
    );
    assert_eq!(deploy.call_count(), 0);
    // Bob's POST /api/chat created his own conversation only: alice still has three.
    let mine: Value = app
        .get("/api/conversations", None)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(mine["items"].as_array().unwrap().len(), 3);
    // The interrupt is still pending: alice can recall it.
    let r = app
        .delete(
            &format!("/api/conversations/{conv}/interrupt/{interrupt_id}"),
            None,
        )
        .await;
    assert_eq!(r.status(), 200, "bob recalled alice's interrupt");
    // And the artifact is still alice's, served without injected headers.
    let r = app.get(&artifact_url, None).await;
    assert_eq!(r.status(), 200);
    assert!(r.headers().get("set-cookie").is_none());
    assert_eq!(r.headers()["content-type"], "application/octet-stream");
    let disposition = r.headers()["content-disposition"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(!disposition.contains('\r') && !disposition.contains('\n'));
    assert_eq!(r.bytes().await.unwrap().as_ref(), b"<h1>hi</h1>");

    // Let both runs finish.
    app.gate.release();
    let r = app
        .post(
            &format!("/api/approvals/{approval_id}"),
            json!({"approve": false}),
            None,
        )
        .await;
    assert_eq!(r.status(), 200);
    for run in [&run, &run_approval] {
        let events = app.events(run, None).await;
        assert_eq!(events.last().unwrap().event, "done");
    }
}

#[tokio::test]
async fn malformed_ids_are_400_or_404_on_every_route() {
    let app = TestApp::spawn().await;
    let doc = openapi(&app).await;
    let bad = [
        "not-a-uuid",
        "..",
        "%2e%2e",
        "..%2f..%2fetc%2fpasswd",
        "%00",
        "%0d%0aSet-Cookie:%20x=1",
        "0",
        "-1",
        "%E2%98%83",
        "%7B00000000-0000-0000-0000-000000000000%7D",
        "00000000-0000-0000-0000-00000000000g",
        "00000000-0000-0000-0000-0000000000000",
    ];
    let long = "a".repeat(4000);
    let mut checked = 0;
    for op in operations(&doc).into_iter().filter(Op::has_path_params) {
        for value in bad.iter().copied().chain([long.as_str()]) {
            let ids: BTreeMap<&str, String> = ["id", "run_id", "interrupt_id"]
                .into_iter()
                .map(|k| (k, value.to_string()))
                .collect();
            let path = fill(&op.path, &ids);
            let body = op.has_body.then(|| op.valid_body());
            let r = send(&app, &op.method, &path, body, None).await;
            let status = r.status().as_u16();
            assert!(
                status == 404 || status == 400,
                "{} {path} → {status}",
                op.method
            );
            assert!(r.headers().get("set-cookie").is_none());
            let body: Value = r.json().await.unwrap();
            assert!(
                body["error"]["code"].is_string(),
                "{} {path}: {body}",
                op.method
            );
            checked += 1;
        }
    }
    assert!(checked >= 10 * bad.len());
}

/// Sends `request_line` (and nothing else) on a raw socket, so no client normalises the path;
/// returns the status and the whole response text.
async fn raw_get(addr: SocketAddr, target: &str) -> (u16, String) {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!("GET {target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut out))
        .await
        .expect("response took too long")
        .unwrap();
    let text = String::from_utf8_lossy(&out).to_string();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status for {target}: {text:?}"));
    (status, text)
}

#[tokio::test]
async fn static_files_and_artifacts_cannot_escape_their_directories() {
    // The helper serves the repository's static/; Cargo.toml sits next to it, /etc/passwd
    // further up.
    let app = TestApp::spawn().await;
    let (status, text) = raw_get(app.addr, "/index.html").await;
    assert_eq!(status, 200, "{text}");
    let cargo = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
    let leaked = |text: &str| text.contains("[dependencies]") || text.contains("root:x:0:0");
    let attempts = [
        "/../Cargo.toml".to_string(),
        "/static/../Cargo.toml".into(),
        "/css/../../Cargo.toml".into(),
        "/%2e%2e/Cargo.toml".into(),
        "/%2e%2e%2fCargo.toml".into(),
        "/..%2fCargo.toml".into(),
        "/%2E%2E%2FCargo.toml".into(),
        "/%252e%252e/Cargo.toml".into(),
        "/..%5cCargo.toml".into(),
        "/..\\Cargo.toml".into(),
        "/.%2e/Cargo.toml".into(),
        "/%2e%2e/%2e%2e/%2e%2e/%2e%2e/%2e%2e/%2e%2e/%2e%2e/%2e%2e/etc/passwd".into(),
        "/../../../../../../../../etc/passwd".into(),
        "//etc/passwd".into(),
        "/%2fetc%2fpasswd".into(),
        format!("/{cargo}"),
        format!("/{}", cargo.replace('/', "%2f")),
        "/..;/Cargo.toml".into(),
        "/..%00/Cargo.toml".into(),
        "/%c0%ae%c0%ae/Cargo.toml".into(),
        "/api/artifacts/..%2f..%2fCargo.toml".into(),
        "/api/artifacts/../../Cargo.toml".into(),
        "/api/artifacts/%2e%2e%2f%2e%2e%2fetc%2fpasswd".into(),
        "/api/../Cargo.toml".into(),
        "/api/%2e%2e/Cargo.toml".into(),
    ];
    for target in &attempts {
        let (status, text) = raw_get(app.addr, target).await;
        assert!(!leaked(&text), "{target} escaped: {text}");
        assert!((400..500).contains(&status), "{target} → {status}: {text}");
    }
}

#[tokio::test]
async fn control_characters_never_break_sse_framing() {
    let app = TestApp::spawn().await;
    let hostile = "a\r\nevent: done\r\ndata: {\"status\":\"completed\"}\r\n\r\nid: 999\n\nb\u{0}\u{1b}[31m\u{2028}\u{85}\r";
    let args = json!({"text": hostile}).to_string();
    app.llm.tool_calls(&[("c1\r\nevent: x", "echo", &args)]);
    app.llm.text(hostile);
    let r = app
        .post(
            "/api/conversations",
            json!({"title": "t\r\nevent: done\r\n\r\n"}),
            None,
        )
        .await;
    assert_eq!(r.status(), 201);
    let conv = r.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let query = hostile.replace('\u{0}', "");
    let run = app.start_run(&conv, json!({"query": query}), None).await;
    let r = app.events_response(&run, None).await;
    let mut body = r.bytes_stream();
    let mut raw = Vec::new();
    tokio::time::timeout(Duration::from_secs(20), async {
        while let Some(chunk) = body.next().await {
            raw.extend_from_slice(&chunk.unwrap());
        }
    })
    .await
    .expect("stream did not end");
    let raw = String::from_utf8(raw).unwrap();
    assert!(!raw.contains('\r'), "a raw CR reached the stream");
    let frames: Vec<&str> = raw.split("\n\n").filter(|f| !f.is_empty()).collect();
    let mut names = Vec::new();
    let frames: Vec<Vec<&str>> = frames
        .iter()
        .map(|f| {
            f.lines()
                .filter(|l| !l.starts_with(':'))
                .collect::<Vec<_>>()
        })
        .filter(|lines| !lines.is_empty())
        .collect();
    for (i, lines) in frames.iter().enumerate() {
        let frame = lines.join("\n");
        assert_eq!(lines.len(), 3, "frame {i} is not id/event/data: {frame:?}");
        assert_eq!(lines[0], format!("id: {}", i + 1));
        let name = lines[1].strip_prefix("event: ").unwrap();
        let data = lines[2].strip_prefix("data: ").unwrap();
        let parsed: Value = serde_json::from_str(data).unwrap();
        names.push((name.to_string(), parsed));
    }
    assert_eq!(
        names.iter().filter(|(n, _)| n == "done").count(),
        1,
        "forged done"
    );
    let (last, done) = names.last().unwrap();
    assert_eq!(last, "done");
    assert_eq!(done["status"], "completed");
    // The hostile text went through intact, as JSON data.
    let tool_end = names
        .iter()
        .find(|(n, d)| n == "step" && d["type"] == "tool_end")
        .unwrap();
    assert!(tool_end.1["observation"]
        .as_str()
        .unwrap()
        .contains("event: done"));
}

#[tokio::test]
async fn no_request_input_is_reflected_into_response_headers() {
    let app = TestApp::spawn().await;
    for target in [
        "/api/nope?x=%0d%0aSet-Cookie:%20a=b",
        "/%0d%0aSet-Cookie:%20a=b",
        "/api/conversations/%0d%0aSet-Cookie:%20a=b",
        "/api/runs/00000000-0000-0000-0000-000000000000/events?after=%0d%0aSet-Cookie:%20a=b",
    ] {
        let (status, text) = raw_get(app.addr, target).await;
        let head = text.split("\r\n\r\n").next().unwrap().to_ascii_lowercase();
        assert!(!head.contains("set-cookie"), "{target} → {status}: {head}");
        assert!(status < 500, "{target} → {status}");
    }
    let r = app
        .client
        .get(app.url("/api/runs/00000000-0000-0000-0000-000000000000/events"))
        .header("Last-Event-ID", "1\tSet-Cookie: a=b")
        .send()
        .await
        .unwrap();
    assert!(r.headers().get("set-cookie").is_none());
    assert_eq!(error_code(r, 400).await, "invalid_request");
}

/// Each connection's read buffer is capped at 8 KB (`server::serve`): bodies far larger still
/// arrive whole (they are read through it in pieces), a request head that does not fit gets a
/// clear 431 on its own connection, and the server goes on serving.
#[tokio::test]
async fn requests_larger_than_the_read_buffer() {
    let app = TestApp::spawn().await;
    let prompt: String = "é long system prompt; ".repeat(3000); // ~69 KB
    let r = app
        .post("/api/conversations", json!({"system_prompt": prompt}), None)
        .await;
    assert_eq!(r.status(), 201);
    let id = r.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let got: Value = app
        .client
        .get(app.url(&format!("/api/conversations/{id}")))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(got["system_prompt"], prompt.as_str(), "stored intact");

    let mut stream = tokio::net::TcpStream::connect(app.addr).await.unwrap();
    let head = format!(
        "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: {}\r\nConnection: close\r\n\r\n",
        "a".repeat(16 * 1024)
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut out))
        .await
        .expect("an answer, not a hang")
        .unwrap();
    let text = String::from_utf8_lossy(&out);
    assert!(text.starts_with("HTTP/1.1 431"), "{text}");

    let (status, _) = raw_get(app.addr, "/healthz").await;
    assert_eq!(status, 200, "still serving");
}

/// A request line that does not fit the 8 KB read buffer is a URI too long (414, with the
/// API's JSON error), on a fresh connection and after a served request on a keep-alive one;
/// a long header after a short request line stays 431, and the server goes on serving.
#[tokio::test]
async fn over_long_urls_get_414() {
    let app = TestApp::spawn().await;
    let long = format!(
        "GET /api/conversations?q={} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        "a".repeat(12 * 1024)
    );
    for keep_alive in [false, true] {
        let mut stream = tokio::net::TcpStream::connect(app.addr).await.unwrap();
        if keep_alive {
            stream
                .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
                .await
                .unwrap();
            let mut first = Vec::new();
            while !String::from_utf8_lossy(&first).ends_with(r#"{"status":"ok"}"#) {
                let mut chunk = [0u8; 1024];
                let n = stream.read(&mut chunk).await.unwrap();
                assert!(n > 0, "closed before the first response");
                first.extend_from_slice(&chunk[..n]);
            }
        }
        let text = exchange(&mut stream, &long).await;
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(
            head.starts_with("HTTP/1.1 414 "),
            "keep-alive {keep_alive}: {text}"
        );
        let body: Value = serde_json::from_str(body).unwrap();
        assert_eq!(body["error"]["code"], "uri_too_long", "{body}");
    }
    let big_header = format!(
        "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: {}\r\nConnection: close\r\n\r\n",
        "a".repeat(12 * 1024)
    );
    let mut stream = tokio::net::TcpStream::connect(app.addr).await.unwrap();
    let text = exchange(&mut stream, &big_header).await;
    assert!(text.starts_with("HTTP/1.1 431"), "{text}");
    let (status, _) = raw_get(app.addr, "/healthz").await;
    assert_eq!(status, 200, "still serving");
}

/// Writes `request` and reads until the server closes the connection.
async fn exchange(stream: &mut tokio::net::TcpStream, request: &str) -> String {
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut out))
        .await
        .expect("an answer, not a hang")
        .unwrap();
    String::from_utf8_lossy(&out).into_owned()
}

#[tokio::test]
async fn bodies_over_the_limit_are_413_on_every_body_route_sized_or_chunked() {
    let app = TestApp::spawn().await;
    let conv = app.create_conversation(None).await;
    let doc = openapi(&app).await;
    let ids: BTreeMap<&str, String> = [
        ("id", conv.clone()),
        ("run_id", uuid::Uuid::new_v4().to_string()),
        ("interrupt_id", uuid::Uuid::new_v4().to_string()),
    ]
    .into();
    let mut checked = 0;
    for op in operations(&doc).into_iter().filter(|op| op.has_body) {
        // A syntactically valid JSON body just over 1 MiB.
        let big = json!({"query": "x".repeat(1024 * 1024)}).to_string();
        assert!(big.len() > 1024 * 1024);
        let path = fill(&op.path, &ids);
        let method = reqwest::Method::from_bytes(op.method.to_uppercase().as_bytes()).unwrap();
        let sized = app
            .client
            .request(method.clone(), app.url(&path))
            .header("content-type", "application/json")
            .body(big.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(error_code(sized, 413).await, "payload_too_large", "{path}");
        // Chunked: no Content-Length, the limit must still hold while streaming.
        let chunks: Vec<Result<Vec<u8>, std::io::Error>> = big
            .as_bytes()
            .chunks(64 * 1024)
            .map(|c| Ok(c.to_vec()))
            .collect();
        let chunked = app
            .client
            .request(method, app.url(&path))
            .header("content-type", "application/json")
            .body(reqwest::Body::wrap_stream(futures::stream::iter(chunks)))
            .send()
            .await
            .unwrap();
        assert_eq!(
            error_code(chunked, 413).await,
            "payload_too_large",
            "{path} chunked"
        );
        checked += 1;
    }
    assert!(checked >= 6, "only {checked} body routes");
    // Nothing was started.
    let detail: Value = app
        .get(&format!("/api/conversations/{conv}"), None)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(detail["messages"], json!([]));
}

#[tokio::test]
async fn text_bound_is_100_000_characters_not_bytes() {
    let app = TestApp::spawn().await;
    app.llm.tool_calls(&[("c1", "gate", "{}")]);
    app.llm.text("ok");
    let conv = app.create_conversation(None).await;
    let runs = format!("/api/conversations/{conv}/runs");
    // 100 001 two-byte characters: 200 KB, well under the body limit, one character too many.
    let over = "é".repeat(100_001);
    for (path, body) in [
        (runs.as_str(), json!({"query": over})),
        ("/api/chat", json!({"query": over})),
        (
            &format!("/api/conversations/{conv}/interrupt") as &str,
            json!({"content": over}),
        ),
    ] {
        let r = app.post(path, body, None).await;
        assert_eq!(error_code(r, 400).await, "invalid_request", "{path}");
    }
    // Exactly 100 000 is accepted, for the query and for an interrupt.
    let run = app
        .start_run(&conv, json!({"query": "é".repeat(100_000)}), None)
        .await;
    app.wait_for(&run, |e| e.label() == "step:tool_start").await;
    let r = app.interrupt(&conv, &"é".repeat(100_000)).await;
    assert_eq!(r.status(), 202);
    app.gate.release();
    let events = app.events(&run, None).await;
    assert_eq!(events.last().unwrap().event, "done");
}

/// Titles and system prompts are bounded (a 935,000-character system prompt was accepted and
/// then sent, pinned, with every LLM call), with the limit named in the error.
#[tokio::test]
async fn titles_and_system_prompts_are_bounded() {
    let app = TestApp::spawn().await;
    async fn message(r: reqwest::Response) -> String {
        assert_eq!(r.status(), 400);
        let body: Value = r.json().await.unwrap();
        assert_eq!(body["error"]["code"], "invalid_request");
        body["error"]["message"].as_str().unwrap().to_string()
    }
    let r = app
        .post(
            "/api/conversations",
            json!({"title": "t".repeat(201)}),
            None,
        )
        .await;
    assert!(message(r)
        .await
        .contains("title is longer than 200 characters"));
    let r = app
        .post(
            "/api/conversations",
            json!({"system_prompt": "é".repeat(100_001)}),
            None,
        )
        .await;
    assert!(message(r)
        .await
        .contains("system_prompt is longer than 100000 characters"));
    let r = app
        .post(
            "/api/conversations",
            json!({"title": "é".repeat(200), "system_prompt": "é".repeat(100_000)}),
            None,
        )
        .await;
    assert_eq!(r.status(), 201);
    let id = r.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let r = app
        .client
        .patch(app.url(&format!("/api/conversations/{id}")))
        .json(&json!({"title": "t".repeat(201)}))
        .send()
        .await
        .unwrap();
    assert!(message(r).await.contains("200 characters"));
    let detail: Value = app
        .get(&format!("/api/conversations/{id}"), None)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        detail["title"],
        "é".repeat(200),
        "the refused rename changed nothing"
    );
}

#[tokio::test]
async fn rate_limit_is_per_key_and_wrong_keys_do_not_spend_it() {
    let (app, _) = two_tenants("rate_limit_per_minute = 3").await;
    // Failed authentications neither pass nor consume alice's tokens.
    for _ in 0..5 {
        let r = send(&app, "get", "/api/tools", None, Some("Bearer wrong")).await;
        assert_eq!(error_code(r, 401).await, "unauthorized");
    }
    for _ in 0..3 {
        let r = send(&app, "get", "/api/tools", None, Some(ALICE)).await;
        assert_eq!(r.status(), 200);
    }
    let r = send(&app, "get", "/api/tools", None, Some(ALICE)).await;
    let retry: u64 = r.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=60).contains(&retry), "{retry}");
    assert_eq!(error_code(r, 429).await, "rate_limited");
    // Every /api route is limited, not only the one used above.
    let r = send(
        &app,
        "post",
        "/api/conversations",
        Some(json!({})),
        Some(ALICE),
    )
    .await;
    assert_eq!(error_code(r, 429).await, "rate_limited");
    // Bob has his own bucket; health stays open.
    let r = send(&app, "get", "/api/tools", None, Some(BOB)).await;
    assert_eq!(r.status(), 200);
    assert_eq!(app.get("/healthz", None).await.status(), 200);
}

// ---------------------------------------------------------------------------------------------
// The binary's log: no secrets, no forged lines.

#[tokio::test]
async fn keys_are_never_logged_and_input_cannot_forge_log_lines() {
    const ALICE_KEY: &str = "alice-key-7f3a9c1e5b";
    const BOB_KEY: &str = "bob-key-2d8e4f6a0c";
    const LLM_KEY: &str = "sk-llm-9b1c7d3e5f";
    const WRONG_KEY: &str = "wrong-key-4a6c8e0b2d";
    let llm = FakeOpenAi::start().await.unwrap();
    llm.push(FakeReply::tool_calls(vec![(
        "c1\nFORGED-LINE",
        "no_such_tool\nFORGED-LINE ERROR x",
        "{\"a\":\"\\nFORGED-LINE\"}",
    )]));
    llm.set_default(FakeReply::text("answer\nFORGED-LINE"));
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("r.db").display());
    let api_keys = format!("alice:{ALICE_KEY},bob:{BOB_KEY}");
    let server = Server::serve(
        dir.path(),
        &[
            ("DATABASE_URL", db.as_str()),
            ("LLM_BASE_URL", llm.base_url().as_str()),
            ("LLM_API_KEY", LLM_KEY),
            ("LLM_MAX_RETRIES", "0"),
            ("REAGENT_API_KEYS", api_keys.as_str()),
            ("RUST_LOG", "debug"),
        ],
    )
    .await;
    let base = server.base.clone();
    let client = reqwest::Client::new();
    let auth = |k: &str| format!("Bearer {k}");
    // 401s with wrong keys, a prefix of a real key, and in odd places.
    for key in [WRONG_KEY, &ALICE_KEY[..12], "x\nFORGED-LINE"] {
        let r = client
            .get(format!("{base}/api/conversations"))
            .header("authorization", auth(key).replace('\n', ""))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 401);
    }
    let r = client
        .get(format!("{base}/api/tools?q=%0aFORGED-LINE%0d%0a"))
        .header("x-api-key", WRONG_KEY)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    let r = client
        .get(format!("{base}/api/nope%0aFORGED-LINE%0d%0aFORGED-LINE"))
        .header("authorization", auth(BOB_KEY))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    // A successful run that calls the LLM (with its key) and an unknown tool.
    let r = client
        .post(format!("{base}/api/conversations"))
        .header("authorization", auth(ALICE_KEY))
        .json(&json!({"title": "t\nFORGED-LINE\r\nFORGED-LINE"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let conv = r.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let r = client
        .post(format!("{base}/api/conversations/{conv}/runs"))
        .header("authorization", auth(ALICE_KEY))
        .header("accept", "text/event-stream")
        .json(&json!({"query": "q\nFORGED-LINE\r\nFORGED-LINE ERROR"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let (events, _) = read_until(r, |_| false).await;
    assert_eq!(events.last().unwrap().event, "done");
    let r = client
        .get(format!(
            "{base}/api/runs/{}/events",
            events[0].data["run_id"].as_str().unwrap()
        ))
        .header("authorization", auth(ALICE_KEY))
        .header("last-event-id", "x FORGED-LINE")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    // The LLM really received its key, so a leak would have been possible.
    assert!(llm
        .authorizations()
        .iter()
        .any(|a| a.as_deref() == Some(&format!("Bearer {LLM_KEY}") as &str)));
    let log = server.stop_and_log().await;
    assert!(
        log.contains("run started"),
        "the log was not captured: {log}"
    );
    assert!(log.lines().count() > 10);
    for secret in [ALICE_KEY, BOB_KEY, LLM_KEY, WRONG_KEY] {
        // Any 8-character piece of a key is a leak.
        for start in 0..=secret.len() - 8 {
            let piece = &secret[start..start + 8];
            assert!(
                !log.contains(piece),
                "key piece {piece:?} logged:\n{}",
                log.lines()
                    .filter(|l| l.contains(piece))
                    .collect::<Vec<_>>()
                    .join("\n")
            );
        }
    }
    // Every line is a log record of its own: it starts with the timestamp, so no input could
    // start a line that looks like one.
    for line in log.lines().filter(|l| !l.trim().is_empty()) {
        let b = line.as_bytes();
        let stamped =
            b.len() > 20 && b[..4].iter().all(u8::is_ascii_digit) && b[4] == b'-' && b[10] == b'T';
        assert!(stamped, "a log line not started by the logger: {line:?}");
        assert!(!line.starts_with("FORGED"), "{line:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// SSRF: names and encodings of loopback, and redirects to them.

/// A local server counting requests; `/redirect?to=` answers a 302 (or `code`).
async fn target(ip: &str) -> Target {
    use axum::extract::Query;
    use axum::http::{header, StatusCode};
    let app = axum::Router::new()
        .route("/hello", axum::routing::get(|| async { "hello" }))
        .route(
            "/redirect",
            axum::routing::any(|Query(q): Query<BTreeMap<String, String>>| async move {
                let code: u16 = q.get("code").and_then(|c| c.parse().ok()).unwrap_or(302);
                (
                    StatusCode::from_u16(code).unwrap(),
                    [(header::LOCATION, q.get("to").cloned().unwrap_or_default())],
                )
            }),
        );
    Target::serve(ip, app).await
}

fn http_tool(allowed: &[String]) -> HttpRequestTool {
    HttpRequestTool::new(HttpRequestOptions {
        policy: SsrfPolicy {
            allow_private: false,
            allowed_hosts: allowed.to_vec(),
        },
        max_response_bytes: 1 << 20,
        timeout: Duration::from_secs(10),
    })
}

fn refused(result: &Result<ToolOutput, ToolError>) -> bool {
    matches!(result, Err(ToolError::Refused(_)))
}

/// Names in /etc/hosts that map to a loopback or private address (e.g. `localhost`, the
/// machine's own name).
fn private_host_names() -> Vec<String> {
    let hosts = std::fs::read_to_string("/etc/hosts").unwrap_or_default();
    let mut names = vec![
        "localhost".to_string(),
        "LOCALHOST".into(),
        "localhost.".into(),
    ];
    for line in hosts.lines() {
        let line = line.split('#').next().unwrap_or("");
        let mut fields = line.split_whitespace();
        let Some(ip) = fields
            .next()
            .and_then(|ip| ip.parse::<std::net::IpAddr>().ok())
        else {
            continue;
        };
        if reagent::tools::ssrf::is_forbidden(ip) {
            names.extend(fields.map(str::to_string));
        }
    }
    names.sort();
    names.dedup();
    names
}

#[tokio::test]
async fn loopback_in_every_spelling_is_refused_before_connecting() {
    let server = target("127.0.0.1").await;
    let port = server.addr.port();
    let tool = http_tool(&[]);
    let mut urls: Vec<String> = private_host_names()
        .into_iter()
        .map(|name| format!("http://{name}:{port}/hello"))
        .collect();
    assert!(urls.len() >= 3);
    for host in [
        "127.0.0.1",
        "127.1",
        "127.0.1",
        "2130706433", // decimal
        "0x7f000001", // hex
        "0x7f.0.0.1",
        "0177.0.0.1", // octal
        "017700000001",
        "0177.1",
        "127.000.000.001",
        "0.0.0.0",
        "0",
        "[::1]",
        "[0:0:0:0:0:0:0:1]",
        "[::ffff:127.0.0.1]", // IPv4-mapped
        "[::ffff:7f00:1]",
        "[0:0:0:0:0:ffff:127.0.0.1]",
        "[::127.0.0.1]",        // IPv4-compatible
        "[64:ff9b::127.0.0.1]", // NAT64
        "[2002:7f00:1::]",      // 6to4
        "[::]",
        "%31%32%37%2e%30%2e%30%2e%31", // percent-encoded 127.0.0.1
        "127.0.0.1.",
    ] {
        urls.push(format!("http://{host}:{port}/hello"));
    }
    for url in &urls {
        let result = tool.call(json!({"url": url})).await;
        // A name may also fail to resolve (ToolError::Failed); it must never be fetched.
        assert!(
            refused(&result)
                || matches!(
                    result,
                    Err(ToolError::Failed(_)) | Err(ToolError::InvalidArguments(_))
                ),
            "{url}: {result:?}"
        );
        // Literal addresses need no resolver: they must be refused by the guard itself.
        if url.contains("//127.") || url.contains("//[") || url.contains("//0") {
            assert!(refused(&result), "{url} must be refused: {result:?}");
        }
    }
    assert_eq!(server.hits(), 0, "the loopback server was reached");
}

#[tokio::test]
async fn redirects_from_an_allowed_host_to_any_loopback_spelling_are_refused() {
    let allowed = target("127.0.0.1").await;
    let victim = target("127.0.0.2").await;
    let vport = victim.addr.port();
    let tool = http_tool(&[allowed.addr.to_string()]);
    // The allowed host is reachable, so the refusals below are about the redirect target.
    let ok = tool
        .call(json!({"url": format!("http://{}/hello", allowed.addr)}))
        .await
        .unwrap();
    assert_eq!(ok.content, "HTTP 200\nhello");
    let mut targets: Vec<String> = [
        "127.0.0.2",
        "2130706434",
        "0x7f000002",
        "0177.0.0.2",
        "127.2",
        "[::ffff:127.0.0.2]",
        "[::ffff:7f00:2]",
        "[::127.0.0.2]",
    ]
    .iter()
    .map(|h| format!("http://{h}:{vport}/hello"))
    .collect();
    targets.push(format!("//127.0.0.2:{vport}/hello")); // scheme-relative
    targets.push(format!("http://user:pw@127.0.0.2:{vport}/hello"));
    for name in private_host_names() {
        targets.push(format!("http://{name}:{vport}/hello"));
    }
    let mut redirects = 0;
    for to in &targets {
        for code in [301, 302, 303, 307, 308] {
            let encoded: String = url::form_urlencoded::byte_serialize(to.as_bytes()).collect();
            let url = format!("http://{}/redirect?code={code}&to={encoded}", allowed.addr);
            let result = tool
                .call(json!({"url": url, "method": "POST", "body": "x"}))
                .await;
            assert!(
                matches!(
                    result,
                    Err(ToolError::Refused(_)) | Err(ToolError::Failed(_))
                ),
                "{code} → {to}: {result:?}"
            );
            redirects += 1;
        }
    }
    assert_eq!(victim.hits(), 0, "a redirect reached 127.0.0.2");
    // Every redirect went through the allowed server (the check happens per hop).
    assert_eq!(allowed.hits(), 1 + redirects);
}

// ---------------------------------------------------------------------------------------------
// Constant-time comparison of keys.

/// Every place that reads a secret (`Secret::expose`) in `src/`, and what it does with it: no
/// `==`/`!=`/`eq`/prefix comparison may touch a secret; request-path comparisons go through
/// `constant_time_eq`.
#[test]
fn secrets_are_only_compared_in_constant_time() {
    fn walk(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(
        std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/src")),
        &mut files,
    );
    let mut sites = 0;
    let mut compared = 0;
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            if !line.contains(".expose()") || line.trim_start().starts_with("//") {
                continue;
            }
            sites += 1;
            // The statement around the call (a few lines, for chained calls).
            let around = lines[i.saturating_sub(2)..(i + 3).min(lines.len())].join("\n");
            for bad in ["==", "!=", ".eq(", "starts_with", "ends_with", ".cmp("] {
                assert!(
                    !around.contains(bad),
                    "{}:{}: a secret near `{bad}`:\n{around}",
                    file.display(),
                    i + 1
                );
            }
            if around.contains("constant_time_eq") {
                compared += 1;
            }
        }
        // `constant_time_eq` itself must examine every byte (no early return in the loop).
        // (It lives in `domain`, shared by the server's key check and `config`'s tenant lookup.)
        if file.ends_with("src/domain.rs") {
            let start = text.find("pub fn constant_time_eq").unwrap();
            let body = &text[start..start + text[start..].find("\n}\n").unwrap()];
            assert_eq!(
                body.matches("return").count(),
                1,
                "only the length check returns early"
            );
            assert!(body.contains("fold"), "{body}");
        }
    }
    assert!(sites >= 3, "Secret::expose call sites not found");
    assert!(compared >= 1, "no comparison site uses constant_time_eq");
    // And the request path compares that way.
    let auth = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/src/server/auth.rs"))
        .unwrap();
    assert!(
        auth.matches("constant_time_eq(presented.as_bytes(), key)")
            .count()
            == 1
    );
    assert!(auth.matches("constant_time_eq(p.as_bytes(), key)").count() == 1);
}

// ---------------------------------------------------------------------------------------------
// Model and tool output the database cannot hold as is.

/// NUL (U+0000) in what the model and a tool produce: the API refuses it in client input
/// (400), but model output cannot be refused — it must still be persisted (PostgreSQL `text`
/// cannot hold NUL) and the run must complete.
async fn nul_in_model_and_tool_output_is_persisted(db: String) {
    let app = TestApp::spawn_on(&db).await;
    app.llm
        .tool_calls(&[("c1", "echo", "{\"text\":\"a\\u0000b\"}")]);
    app.llm.text("thinking\u{0}done");
    app.llm
        .push_stream(reagent::testing::scripted::Turn::Stream(
            vec!["answer with \u{0} NUL".into()],
            None,
        ));
    let conv = app.create_conversation(None).await;
    let run = app.start_run(&conv, json!({"query": "q"}), None).await;
    let events = app.events(&run, None).await;
    let done = &events.last().unwrap().data;
    assert_eq!(done["status"], "completed", "{done}");
    let detail: Value = app
        .get(&format!("/api/conversations/{conv}"), None)
        .await
        .json()
        .await
        .unwrap();
    let messages = detail["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2, "{detail}");
    assert!(messages[1]["content"]
        .as_str()
        .unwrap()
        .contains("answer with"));
    let run_row: Value = app
        .get(&format!("/api/runs/{run}"), None)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(run_row["status"], "completed");
    let stored = app
        .app
        .state
        .store
        .list_events(uuid::Uuid::parse_str(&run).unwrap(), 0)
        .await
        .unwrap();
    assert_eq!(stored.len(), events.len());
}

on_both_backends!(nul_in_model_and_tool_output_is_persisted);
