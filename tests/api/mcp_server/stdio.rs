//! `reagent mcp --url` (the stdio bridge to `/mcp`) launched as a server process by the official
//! MCP Python and TypeScript SDK stdio clients, and driven by hand for what no SDK shows: an
//! unreachable reagent, a refused key, a line that is not JSON, EOF.

use std::process::Stdio;
use std::time::Duration;

use reagent::testing::scripted::{response, Turn};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::Command;

use super::{app, ALICE};
use crate::support::app::TestApp;
use crate::support::child::{BIN, TIMEOUT};
use crate::support::peers;

/// A first call that steps through a tool to "from reagent", then a call whose model never
/// answers (so only a relayed cancellation ends it). The answer comes half a second after the
/// tool's progress: the TypeScript SDK drops a progress notification that it reads in the same
/// chunk as its call's response (it hands notifications on a microtask later), and a run that
/// ends at once put both in one chunk on a busy machine.
fn script(app: &TestApp) {
    app.llm.tool_calls(&[("c1", "echo", r#"{"text":"x"}"#)]);
    app.llm.text("brief").push_stream(Turn::Paced {
        chunks: vec!["from reagent".into()],
        every: Duration::from_millis(500),
        then: None,
    });
    app.llm.push(Turn::Reply(
        response("late", vec![]),
        Duration::from_secs(3600),
    ));
}

/// Runs the stdio peer `program` (`python` or `node` with its leading arguments) and checks
/// what every client must see: both tools, the answer with progress per step, a ping answered
/// during a long call, and that call's run cancelled by the client's cancellation.
async fn run_client(app: &TestApp, mut program: Command, script: &str) {
    let base = app.url("");
    let args = [BIN, &base, ALICE, "helper", "echo x", "slow"];
    let out = tokio::time::timeout(
        TIMEOUT,
        program.arg(peers::dir().join(script)).args(args).output(),
    )
    .await
    .expect("the peer ends")
    .expect("the peer starts");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{script} failed: {stderr}");
    let seen: Value = serde_json::from_slice(&out.stdout).unwrap();
    // What the peer saw, then its stderr (the bridge's log with RUST_LOG=reagent=debug).
    let said = format!("{seen}\n{stderr}");
    assert_eq!(seen["tools"], json!(["helper", "plan_ner"]), "{said}");
    assert_eq!(seen["is_error"], false, "{said}");
    assert_eq!(seen["text"], "from reagent", "{said}");
    assert_eq!(seen["structured"]["status"], "completed", "{said}");
    // Progress per step; the answer comes well after it (see `script`).
    let progress = seen["progress"].as_array().expect("progress is a list");
    let messages: Vec<&Value> = progress.iter().map(|p| &p["message"]).collect();
    assert_eq!(messages, ["tool_start echo", "tool_end echo"], "{said}");
    assert_eq!(progress[0]["progress"].as_f64(), Some(1.0), "{said}");
    assert_eq!(seen["slow_run_status"], "cancelled", "{said}");
}

#[tokio::test]
async fn the_python_sdk_runs_an_agent_through_reagent_mcp_over_stdio() {
    let app = app().await;
    script(&app);
    let mut python = Command::new(peers::python());
    python.args(["-W", "error"]);
    run_client(&app, python, "mcp_stdio_client.py").await;
}

#[tokio::test]
async fn the_typescript_sdk_runs_an_agent_through_reagent_mcp_over_stdio() {
    let app = app().await;
    script(&app);
    peers::node_module("@modelcontextprotocol/sdk/package.json");
    run_client(&app, Command::new("node"), "mcp_stdio_client.mjs").await;
}

/// `reagent mcp` with `lines` on its stdin, then EOF: the lines it wrote; it must exit 0.
async fn bridge(url: &str, env: &[(&str, &str)], lines: &[&str]) -> Vec<Value> {
    let mut child = Command::new(BIN)
        .args(["mcp", "--url", url])
        .env_clear()
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for line in lines {
        stdin
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
    }
    drop(stdin);
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut out = Vec::new();
    while let Some(line) = tokio::time::timeout(TIMEOUT, stdout.next_line())
        .await
        .unwrap()
        .unwrap()
    {
        out.push(serde_json::from_str(&line).unwrap());
    }
    let status = tokio::time::timeout(TIMEOUT, child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success(), "{status}");
    out
}

/// The reply to request `id` among `lines`.
fn reply(lines: &[Value], id: Value) -> &Value {
    let found = lines.iter().find(|l| l["id"] == id);
    found.unwrap_or_else(|| panic!("no reply to {id}: {lines:?}"))
}

#[tokio::test]
async fn a_bridge_that_cannot_reach_reagent_answers_each_request_with_an_error_and_exits_on_eof() {
    // A port that was free a moment ago: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let initialize = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let lines = [
        initialize,
        "not json",
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":"p","method":"ping"}"#,
    ];
    let out = bridge(&format!("http://127.0.0.1:{port}"), &[], &lines).await;
    assert_eq!(
        out.len(),
        3,
        "one reply per request and one for the bad line: {out:?}"
    );
    for id in [json!(1), json!("p")] {
        let error = &reply(&out, id)["error"];
        assert_eq!(error["code"], -32000, "{out:?}");
        assert!(
            error["message"]
                .as_str()
                .unwrap()
                .contains("cannot be reached"),
            "{out:?}"
        );
    }
    assert_eq!(reply(&out, Value::Null)["error"]["code"], -32700, "{out:?}");
}

#[tokio::test]
async fn a_bridge_relays_plain_calls_and_names_the_key_variable_when_refused() {
    let app = app().await;
    app.llm.text("brief").stream_text(&["plain"]);
    let call = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"helper","arguments":{"query":"hi"}}}"#;
    let list = r#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#;
    let out = bridge(&app.url("/"), &[("REAGENT_API_KEY", ALICE)], &[call, list]).await;
    assert_eq!(out.len(), 2, "{out:?}");
    let result = &reply(&out, json!(2))["result"];
    assert_eq!(result["content"][0]["text"], "plain", "{out:?}");
    assert_eq!(
        reply(&out, json!(3))["result"]["tools"][0]["name"],
        "helper"
    );

    let out = bridge(&app.url("/mcp"), &[("OTHER", ALICE)], &[list]).await;
    let message = reply(&out, json!(3))["error"]["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        message.contains("401") && message.contains("REAGENT_API_KEY"),
        "{message}"
    );
}
