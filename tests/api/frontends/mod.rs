//! The front-end protocols (docs/protocols.md) driven by their official clients: `ag_ui` with
//! `@ag-ui/client`'s HttpAgent (`tests/peers/ag_ui_client.mjs`, whose event verification throws
//! on any protocol violation), `ai_sdk` with the `ai` package's own chat and transport
//! (`tests/peers/ai_sdk_chat.mjs`), `resume` with its `reconnectToStream`; `edges` covers
//! tenancy, bad input and partial resumes with plain HTTP, `cors` the opt-in CORS of these
//! routes, `races` concurrent first requests on a new thread, `tenant_agents` a tenant's own
//! agent on both routes.

mod ag_ui;
mod ai_sdk;
mod codes;
mod cors;
mod edges;
mod images;
mod races;
mod resume;
mod tenant_agents;

use serde_json::{json, Value};

use crate::support::app::{Options, TestApp};
use crate::support::peers;
use crate::support::tools::deploy;

pub const ALICE: &str = "ka-secret-1";
pub const BOB: &str = "kb-secret-2";

/// The agents `helper` (tools `echo` and `deploy`, which needs approval) and `planner` (DAG) on the
/// scripted model; alice's and bob's keys, alice's as the default.
pub async fn app() -> TestApp {
    let mut app = TestApp::with(Options {
        env: vec![("REAGENT_API_KEYS", format!("alice:{ALICE},bob:{BOB}"))],
        toml: r#"
[[models]]
name = "scripted"

[[agents]]
name = "helper"
model = "scripted"
tools = ["echo", "deploy", "gate"]

[[agents]]
name = "planner"
model = "scripted"
tools = ["echo"]
engine = "dag"
"#
        .into(),
        extra_tools: vec![deploy()],
        keep_alive: std::time::Duration::from_millis(200),
        ..Options::default()
    })
    .await;
    app.key = Some(ALICE.into());
    app
}

/// Runs `script` under node with `args`; the JSON it printed.
pub async fn node(script: &str, args: &[String]) -> Value {
    let out = tokio::process::Command::new("node")
        .arg(peers::dir().join(script))
        .args(args)
        .output()
        .await
        .expect("node starts");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{script} failed: {stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("{script}: {e}: {stdout}\n{stderr}"))
}

/// The stored messages of a conversation, as `(role, content)`.
pub async fn stored(app: &TestApp, conversation: &str) -> Vec<(String, String)> {
    let body: Value = app
        .get_json(&format!("/api/conversations/{conversation}"), None)
        .await;
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap().to_string(),
                m["content"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

pub fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

pub fn steps(v: Value) -> String {
    json!(v).to_string()
}
