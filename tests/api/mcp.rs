//! MCP tool servers (docs/protocols.md) against real servers: our own peer written with the official
//! Python `mcp` package (`tests/peers/mcp_peer.py`: list changes, hangs, exits mid-call,
//! isError, images), a misbehaving raw JSON-RPC peer (`tests/peers/mcp_bad_peer.py`) and
//! `@modelcontextprotocol/server-everything` over stdio and streamable HTTP. Runs use the
//! scripted LLM calling `<server>__<tool>`; start-up, logs and process cleanup use the real
//! binary. `scripts/peers.sh` installs the peers.
//!
//! - [`peer`]: a whole run through our peer, /api/tools, /api/mcp, content mapping, list
//!   changes, a crash mid-call and the restart, a hung call's timeout and cancel;
//! - [`startup`]: a server that cannot start, a name collision, bad input from a server;
//! - [`everything`]: server-everything over both transports;
//! - [`process`]: the real binary: no MCP process left after shutdown, no secret in the log.

mod environment;
mod everything;
mod hooks;
mod hostile;
mod peer;
mod process;
mod startup;

use std::path::{Path, PathBuf};

use reagent::testing::scripted::ScriptedLlm;
use serde_json::{json, Value};

use crate::support::app::{Options, TestApp};
use crate::support::peers;
use crate::support::sse::Sse;

/// A `[[mcp]]` entry running `tests/peers/<script>` with the venv's Python.
pub fn python_server(name: &str, script: &str, extra: &str) -> String {
    format!(
        "[[mcp]]\nname = \"{name}\"\ncommand = {:?}\nargs = [{:?}]\n{extra}\n",
        peers::python().display().to_string(),
        peers::dir().join(script).display().to_string(),
    )
}

/// A fresh file for the peer's event log, and the `env` line that points the peer at it.
pub fn peer_log(dir: &Path) -> (PathBuf, String) {
    let log = dir.join("peer.log");
    let line = format!("env = {{ MCP_PEER_LOG = {:?} }}", log.display().to_string());
    (log, line)
}

pub fn read_log(log: &Path) -> String {
    std::fs::read_to_string(log).unwrap_or_default()
}

/// An app with the scripted LLM and these `[[mcp]]` entries.
pub async fn app_with(llm: ScriptedLlm, toml: &str) -> TestApp {
    TestApp::with(Options {
        llm,
        toml: toml.to_string(),
        // The scripts are the tool calls: no completion check, no tool-selection turn.
        env: vec![
            ("REACT_COMPLETION_CHECK_MIN_TOOLS", "100".into()),
            ("REACT_TOOL_SELECTION_THRESHOLD", "100".into()),
        ],
        ..Options::default()
    })
    .await
}

/// Starts a run in a new conversation and reads its whole stream.
pub async fn run(app: &TestApp, query: &str) -> Vec<Sse> {
    let conv = app.create_conversation(None).await;
    let run = app.start_run(&conv, json!({ "query": query }), None).await;
    app.events(&run, None).await
}

/// The `tool_end` step of `call_id`.
pub fn tool_end<'a>(events: &'a [Sse], call_id: &str) -> &'a Value {
    events
        .iter()
        .find(|e| e.label() == "step:tool_end" && e.data["call_id"] == call_id)
        .map(|e| &e.data)
        .unwrap_or_else(|| panic!("no tool_end for {call_id}: {events:?}"))
}

/// The `/api/mcp` entry of `name`.
pub async fn server_status(app: &TestApp, name: &str) -> Value {
    let all = app.get_json("/api/mcp", None).await;
    all.as_array()
        .and_then(|a| a.iter().find(|s| s["name"] == name).cloned())
        .unwrap_or_else(|| panic!("no server {name} in {all}"))
}

/// Waits until `/api/mcp` says `name` is in `state`.
pub async fn wait_state(app: &TestApp, name: &str, state: &str) -> Value {
    crate::support::eventually(&format!("MCP server {name} {state}"), || async {
        let s = server_status(app, name).await;
        if s["state"] == state {
            Ok(s)
        } else {
            Err(s.to_string())
        }
    })
    .await
}
