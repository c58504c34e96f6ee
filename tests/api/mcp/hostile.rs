//! A hostile stdio server (`tests/peers/mcp_bad_peer.py`): one tool whose schema nests past
//! serde_json's recursion limit costs that tool only, named with its reason in `/api/mcp`; a
//! 50 MB answer and an answer that is not UTF-8 fail their call at once with the real cause,
//! not after `timeout_s`, and the server stays usable.

use std::time::{Duration, Instant};

use reagent::testing::scripted::ScriptedLlm;

use super::{app_with, python_server, run, server_status, tool_end};

#[tokio::test]
async fn a_tool_nested_too_deep_is_skipped_with_its_reason_and_the_rest_served() {
    let llm = ScriptedLlm::native();
    llm.tool_calls(&[("c1", "bad__ok", "{}")]);
    llm.text("done");
    let toml = python_server(
        "bad",
        "mcp_bad_peer.py",
        "env = { MCP_BAD_PEER_DEEP = \"1\" }",
    );
    let app = app_with(llm, &toml).await;
    let status = server_status(&app, "bad").await;
    assert_eq!(status["state"], "ready", "{status}");
    let tools = status["tools"].as_array().unwrap();
    assert!(tools.iter().any(|t| t == "bad__ok"), "{status}");
    assert!(!tools.iter().any(|t| t == "bad__deep"), "{status}");
    let skipped = status["skipped_tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no skipped_tools: {status}"));
    let deep = skipped
        .iter()
        .find(|s| s["tool"] == "deep")
        .unwrap_or_else(|| panic!("deep is not named: {status}"));
    assert!(
        deep["reason"].as_str().unwrap_or_default().contains("deep"),
        "{deep}"
    );
    let events = run(&app, "go").await;
    assert_eq!(tool_end(&events, "c1")["observation"], "fine");
    app.stop().await;
}

#[tokio::test]
async fn an_oversized_or_non_utf8_answer_fails_at_once_and_the_server_stays_usable() {
    let llm = ScriptedLlm::native();
    llm.tool_calls(&[("c1", "bad__enormous", "{}")]);
    llm.tool_calls(&[("c2", "bad__not_utf8", "{}")]);
    llm.tool_calls(&[("c3", "bad__ok", "{}")]);
    llm.text("survived");
    // Far above what the calls take: an answer after it would be a timeout, not the cause.
    let toml = python_server("bad", "mcp_bad_peer.py", "timeout_s = 60");
    let app = app_with(llm, &toml).await;
    let started = Instant::now();
    let events = run(&app, "go").await;
    let took = started.elapsed();
    let big = tool_end(&events, "c1");
    assert_eq!(big["error"], true, "{big}");
    let text = big["observation"].as_str().unwrap();
    assert!(text.contains("larger than"), "{big}");
    assert!(!text.contains("within"), "not a timeout: {big}");
    let bad = tool_end(&events, "c2");
    assert_eq!(bad["error"], true, "{bad}");
    assert!(
        bad["observation"].as_str().unwrap().contains("UTF-8"),
        "{bad}"
    );
    assert_eq!(tool_end(&events, "c3")["observation"], "fine");
    assert!(took < Duration::from_secs(30), "the calls took {took:?}");
    assert_eq!(server_status(&app, "bad").await["state"], "ready");
    app.stop().await;
}
