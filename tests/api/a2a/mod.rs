//! Each agent as an A2A agent at `/a2a/{agent}` (docs/protocols.md): `http` drives the
//! JSON-RPC and the cards with plain HTTP on both wires (1.0 and 0.3 shapes, auth as the card
//! advertises it, tenancy, bad input, resuming a stream by `Last-Event-ID`); `sdk` runs the
//! official `a2a-sdk` Python client (`tests/peers/a2a_client.py`) and `js` the `@a2a-js/sdk`
//! client (`tests/peers/a2a_client.mjs`) against it.

mod http;
mod js;
mod sdk;

use std::time::Duration;

use reagent::llm::ToolCall;
use reagent::testing::scripted::{response, Turn};
use serde_json::{json, Value};

use crate::support::app::{Options, TestApp};
use crate::support::tools::deploy;

pub const ALICE: &str = "ka-secret-1";
pub const BOB: &str = "kb-secret-2";

/// The agents `helper` (tools `echo` and `deploy`, which needs approval, described) and
/// `writer` on the scripted model; alice's and bob's keys, alice's as the default.
pub async fn app() -> TestApp {
    let mut app = TestApp::with(Options {
        env: vec![("REAGENT_API_KEYS", format!("alice:{ALICE},bob:{BOB}"))],
        toml: r#"
[[models]]
name = "scripted"

[[agents]]
name = "helper"
description = "Echoes and deploys"
model = "scripted"
tools = ["echo", "deploy"]

[[agents]]
name = "writer"
model = "scripted"
tools = ["echo"]
"#
        .into(),
        extra_tools: vec![deploy()],
        keep_alive: Duration::from_millis(200),
        ..Options::default()
    })
    .await;
    app.key = Some(ALICE.into());
    app
}

pub fn stream(chunks: &[&str]) -> Turn {
    Turn::Stream(chunks.iter().map(|c| c.to_string()).collect(), None)
}

/// A model reply that calls `name` with `args`.
pub fn tool_reply(id: &str, name: &str, args: &str) -> Turn {
    let call = ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: args.into(),
    };
    Turn::Reply(response("", vec![call]), Duration::ZERO)
}

/// Scripts a run that calls `deploy` (which waits for approval) and then answers `answer`.
pub fn deploy_run(app: &TestApp, answer: &str) {
    app.llm
        .push(tool_reply("d1", "deploy", r#"{"env":"prod"}"#));
    app.llm.text("brief");
    app.llm.push_stream(stream(&[answer]));
}

/// A JSON-RPC request body.
pub fn request(id: u64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}
