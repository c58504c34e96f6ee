//! Agents as an MCP server at `/mcp` (docs/protocols.md): `http` drives the JSON-RPC with plain
//! HTTP (handshake, tools, calls, progress, cancellation, auth, `Origin`, bad input); `sdk`
//! runs the official MCP Python and TypeScript SDK clients and the OpenAI Agents SDK's
//! `MCPServerStreamableHttp` (`tests/peers/mcp_*`) against it; `stdio` the same SDKs' stdio clients
//! launching `reagent mcp --url` (the stdio bridge), and the bridge's own failures.

mod http;
mod sdk;
mod stdio;

use serde_json::{json, Value};

use crate::support::app::{Options, TestApp};

pub const ALICE: &str = "ka-secret-1";
pub const BOB: &str = "kb-secret-2";

/// The agents `helper` (tool `echo`, described) and `plan.ner` (tool `plan_ner`) on the
/// scripted model; alice's and bob's keys, alice's as the default; `https://ok.example` an
/// allowed browser origin.
pub async fn app() -> TestApp {
    let mut app = TestApp::with(Options {
        env: vec![
            ("REAGENT_API_KEYS", format!("alice:{ALICE},bob:{BOB}")),
            ("REAGENT_CORS_ORIGINS", "https://ok.example".into()),
        ],
        toml: r#"
[[models]]
name = "scripted"

[[agents]]
name = "helper"
description = "Answers with the echo tool"
model = "scripted"
tools = ["echo"]

[[agents]]
name = "plan.ner"
model = "scripted"
tools = ["echo"]
"#
        .into(),
        keep_alive: std::time::Duration::from_millis(200),
        ..Options::default()
    })
    .await;
    app.key = Some(ALICE.into());
    app
}

/// A JSON-RPC request body.
pub fn request(id: u64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}
