//! The official MCP Python SDK client (`mcp`, pinned in `tests/peers/`) calling a reagent agent.

use serde_json::Value;

use super::{app, ALICE};
use crate::support::peers;

#[tokio::test]
async fn the_python_sdk_lists_and_calls_an_agent_with_progress() {
    let app = app().await;
    app.llm.tool_calls(&[("c1", "echo", r#"{"text":"x"}"#)]);
    app.llm.text("brief").stream_text(&["from reagent"]);
    let out = tokio::process::Command::new(peers::python())
        .args(["-W", "error"])
        .arg(peers::dir().join("mcp_client.py"))
        .args([
            app.url("/mcp"),
            ALICE.into(),
            "helper".into(),
            "echo x".into(),
        ])
        .output()
        .await
        .expect("the peer starts");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "mcp_client.py failed: {stderr}");
    let seen: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        seen["tools"],
        serde_json::json!(["helper", "plan_ner"]),
        "{seen}"
    );
    assert_eq!(seen["is_error"], false, "{seen}");
    assert_eq!(seen["text"], "from reagent", "{seen}");
    assert_eq!(seen["structured"]["answer"], "from reagent");
    assert_eq!(seen["structured"]["status"], "completed");
    assert!(seen["progress"].as_array().unwrap().len() >= 2, "{seen}");
}

#[tokio::test]
async fn the_typescript_sdk_lists_and_calls_an_agent_with_progress() {
    let app = app().await;
    app.llm.tool_calls(&[("c1", "echo", r#"{"text":"x"}"#)]);
    app.llm.text("brief").stream_text(&["from reagent"]);
    let out = tokio::process::Command::new("node")
        .arg(peers::dir().join("mcp_client.mjs"))
        .args([
            app.url("/mcp"),
            ALICE.into(),
            "helper".into(),
            "echo x".into(),
        ])
        .output()
        .await
        .expect("node starts");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "mcp_client.mjs failed: {stderr}");
    let seen: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        seen["tools"],
        serde_json::json!(["helper", "plan_ner"]),
        "{seen}"
    );
    assert_eq!(seen["is_error"], false, "{seen}");
    assert_eq!(seen["text"], "from reagent", "{seen}");
    assert_eq!(seen["structured"]["status"], "completed");
    assert!(seen["progress"].as_array().unwrap().len() >= 2, "{seen}");
}

#[tokio::test]
async fn the_openai_agents_sdk_calls_a_reagent_agent_as_an_mcp_tool() {
    let app = app().await;
    app.llm.text("brief").stream_text(&["from reagent"]);
    let out = tokio::process::Command::new(peers::python())
        .arg(peers::dir().join("mcp_agents_sdk.py"))
        .args([app.url("/mcp"), ALICE.into(), "helper".into(), "hi".into()])
        .output()
        .await
        .expect("the peer starts");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "mcp_agents_sdk.py failed: {stderr}");
    let seen: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        seen["tools"],
        serde_json::json!(["helper", "plan_ner"]),
        "{seen}"
    );
    assert_eq!(seen["is_error"], false, "{seen}");
    assert_eq!(seen["text"], "from reagent", "{seen}");
    assert_eq!(seen["structured"]["status"], "completed", "{seen}");
}
