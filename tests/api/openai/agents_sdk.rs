//! The OpenAI Agents SDK (`openai-agents`, pinned in `tests/peers/`) running a reagent agent as
//! its model through `OpenAIResponsesModel` on `/v1` (`tests/peers/openai_agents_sdk.py`): the
//! SDK's own function tool is a caller tool for reagent; the SDK runs it and the run goes on to
//! the final output, the agent's own tool staying invisible to the SDK.

use std::time::Duration;

use reagent::llm::{Role, ToolCall};
use reagent::testing::scripted::{response, Turn};
use serde_json::{json, Value};

use super::responses::{app_on, stream};
use super::ALICE;
use crate::support::peers;

#[tokio::test]
async fn the_agents_sdk_runs_a_reagent_agent_with_its_own_function_tool_to_the_final_output() {
    let app = app_on(None).await;
    let calls = vec![
        ToolCall {
            id: "c1".into(),
            name: "echo".into(),
            arguments: r#"{"text":"hi"}"#.into(),
        },
        ToolCall {
            id: "c2".into(),
            name: "get_secret".into(),
            arguments: r#"{"name":"ada"}"#.into(),
        },
    ];
    app.llm
        .push(Turn::Reply(response("", calls), Duration::ZERO));
    app.llm.text("brief");
    app.llm
        .push_stream(stream(&["The secret of ada ", "is 42."]));
    let out = tokio::process::Command::new(peers::python())
        .args(["-W", "error"])
        .arg(peers::dir().join("openai_agents_sdk.py"))
        .args([app.url("/v1"), ALICE.into(), "helper".into()])
        .output()
        .await
        .expect("the peer starts");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "openai_agents_sdk.py failed: {stderr}"
    );
    let seen: Value = serde_json::from_slice(&out.stdout).unwrap();

    assert_eq!(seen["final_output"], "The secret of ada is 42.", "{seen}");
    assert_eq!(seen["calls"], json!(["ada"]), "the SDK ran its tool once");
    // The agent's own tool step reaches the SDK as an `mcp_call` item, a tool call the server
    // ran (docs/protocols.md); then its own tool's call, its output, the answer.
    let kinds: Vec<(&str, &str)> = seen["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["type"].as_str().unwrap(),
                i["raw"]["type"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("tool_call_item", "mcp_call"),
            ("tool_call_item", "function_call"),
            ("tool_call_output_item", "function_call_output"),
            ("message_output_item", "message")
        ],
        "{seen}"
    );
    assert_eq!(seen["items"][0]["raw"]["name"], "echo");
    assert_eq!(seen["items"][0]["raw"]["status"], "completed");
    assert_eq!(seen["responses"].as_array().unwrap().len(), 2);

    // The continuation's model call read the agent's own result and the SDK's.
    let last = app.llm.chat_requests().pop().unwrap();
    let results: Vec<(Option<&str>, &str)> = last
        .messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| (m.tool_call_id.as_deref(), m.content.as_str()))
        .collect();
    assert_eq!(
        results,
        [
            (Some("c1"), "echo: {\"text\":\"hi\"}"),
            (Some("c2"), "the secret of ada is 42")
        ]
    );
}
