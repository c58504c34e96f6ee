//! The official MCP Python and TypeScript SDK clients and the OpenAI Agents SDK's
//! `MCPServerStreamableHttp` (pinned in `tests/peers/`) calling a reagent agent.

use serde_json::Value;
use tokio::process::Command;

use super::{app, ALICE};
use crate::support::app::TestApp;
use crate::support::peers;

/// Runs the peer `program` (`python` or `node`, with its leading arguments) against `/mcp`,
/// asking agent `helper` `query`; what it saw (its JSON stdout), checked for what every
/// client must see: both tools listed and the run's answer as a successful result.
async fn run_client(app: &TestApp, mut program: Command, script: &str, query: &str) -> Value {
    let out = program
        .arg(peers::dir().join(script))
        .args([app.url("/mcp"), ALICE.into(), "helper".into(), query.into()])
        .output()
        .await
        .expect("the peer starts");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{script} failed: {stderr}");
    let seen: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        seen["tools"],
        serde_json::json!(["helper", "plan_ner"]),
        "{seen}"
    );
    assert_eq!(seen["is_error"], false, "{seen}");
    assert_eq!(seen["text"], "from reagent", "{seen}");
    assert_eq!(seen["structured"]["status"], "completed", "{seen}");
    seen
}

#[tokio::test]
async fn the_python_sdk_lists_and_calls_an_agent_with_progress() {
    let app = app().await;
    app.llm.tool_calls(&[("c1", "echo", r#"{"text":"x"}"#)]);
    app.llm.text("brief").stream_text(&["from reagent"]);
    let mut python = Command::new(peers::python());
    python.args(["-W", "error"]);
    let seen = run_client(&app, python, "mcp_client.py", "echo x").await;
    assert_eq!(seen["structured"]["answer"], "from reagent");
    assert!(seen["progress"].as_array().unwrap().len() >= 2, "{seen}");
}

#[tokio::test]
async fn the_typescript_sdk_lists_and_calls_an_agent_with_progress() {
    let app = app().await;
    app.llm.tool_calls(&[("c1", "echo", r#"{"text":"x"}"#)]);
    app.llm.text("brief").stream_text(&["from reagent"]);
    let seen = run_client(&app, Command::new("node"), "mcp_client.mjs", "echo x").await;
    assert!(seen["progress"].as_array().unwrap().len() >= 2, "{seen}");
}

#[tokio::test]
async fn the_openai_agents_sdk_calls_a_reagent_agent_as_an_mcp_tool() {
    let app = app().await;
    app.llm.text("brief").stream_text(&["from reagent"]);
    let python = Command::new(peers::python());
    run_client(&app, python, "mcp_agents_sdk.py", "hi").await;
}
