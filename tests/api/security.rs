//! Security properties of the HTTP service (docs/api.md) and of `http_request`'s SSRF
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
//!
//! By topic: [`auth`], [`constant_time`], [`limits`], [`logs`], [`nul`], [`paths`], [`ssrf`],
//! [`tenancy`].

mod auth;
mod constant_time;
mod limits;
mod logs;
mod nul;
mod paths;
mod redirects;
mod ssrf;
mod tenancy;

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

/// Routes that need no API key (docs/api.md; `/metrics` has its own, absent here).
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
        } else if self.path.ends_with("/tool_outputs") {
            json!({"outputs": [{"call_id": "call_1", "output": "42"}]})
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
