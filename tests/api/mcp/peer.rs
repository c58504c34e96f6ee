//! A whole run through our Python peer (`tests/peers/mcp_peer.py`).

use reagent::testing::scripted::ScriptedLlm;
use serde_json::Value;

use super::{
    app_with, peer_log, python_server, read_log, run, server_status, tool_end, wait_state,
};

#[tokio::test]
async fn the_observation_is_the_servers_answer_and_the_tool_is_listed() {
    let llm = ScriptedLlm::native();
    llm.tool_calls(&[("c1", "peer__echo", r#"{"text":"hello mcp"}"#)]);
    llm.text("done");
    let app = app_with(llm, &python_server("peer", "mcp_peer.py", "")).await;
    let events = run(&app, "go").await;
    let end = tool_end(&events, "c1");
    assert_eq!(end["error"], false, "{end}");
    assert_eq!(end["observation"], "echo: hello mcp");

    let tools: Value = app.get_json("/api/tools", None).await;
    let echo = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "peer__echo")
        .unwrap_or_else(|| panic!("peer__echo not in {tools}"));
    assert_eq!(echo["source"], "mcp");
    assert_eq!(echo["server"], "peer");
    assert_eq!(echo["parameters"]["type"], "object");
    let builtin = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "echo")
        .unwrap();
    assert!(builtin.get("server").is_none(), "{builtin}");

    let status = server_status(&app, "peer").await;
    assert_eq!(status["state"], "ready");
    assert_eq!(status["transport"], "stdio");
    assert!(status["tools"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t == "peer__hang"));
    let metrics = app.get("/metrics", None).await.text().await.unwrap();
    assert!(
        metrics.contains("reagent_mcp_server_up{server=\"peer\"} 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains("reagent_mcp_calls_total{server=\"peer\",outcome=\"ok\"} 1"),
        "{metrics}"
    );
    app.stop().await;
}

#[tokio::test]
async fn is_error_is_an_error_observation_and_images_are_artifacts() {
    let llm = ScriptedLlm::native();
    llm.tool_calls(&[("c1", "peer__fail", "{}"), ("c2", "peer__image", "{}")]);
    llm.text("done");
    let app = app_with(llm, &python_server("peer", "mcp_peer.py", "")).await;
    let events = run(&app, "go").await;
    let fail = tool_end(&events, "c1");
    assert_eq!(fail["error"], true, "{fail}");
    assert!(
        fail["observation"]
            .as_str()
            .unwrap()
            .contains("failed on purpose"),
        "{fail}"
    );
    let image = tool_end(&events, "c2");
    assert_eq!(image["error"], false, "{image}");
    let artifacts = image["artifacts"]
        .as_array()
        .unwrap_or_else(|| panic!("no artifacts: {image}"));
    assert_eq!(artifacts.len(), 1, "{image}");
    assert_eq!(artifacts[0]["mime_type"], "image/png", "{image}");
    app.stop().await;
}

#[tokio::test]
async fn a_list_change_is_seen_without_a_restart() {
    let llm = ScriptedLlm::native();
    llm.tool_calls(&[("c1", "peer__add_tool", "{}")]);
    llm.text("added");
    llm.tool_calls(&[("c2", "peer__extra", "{}")]);
    llm.text("called it");
    let app = app_with(llm, &python_server("peer", "mcp_peer.py", "")).await;
    let events = run(&app, "add a tool").await;
    assert_eq!(tool_end(&events, "c1")["observation"], "added");
    crate::support::eventually("peer__extra listed", || async {
        let tools = app.get_json("/api/tools", None).await;
        tools
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "peer__extra")
    })
    .await;
    let events = run(&app, "call it").await;
    let end = tool_end(&events, "c2");
    assert_eq!(end["error"], false, "{end}");
    assert_eq!(end["observation"], "extra ran");
    app.stop().await;
}

#[tokio::test]
async fn a_server_killed_mid_call_fails_the_call_at_once_and_comes_back() {
    let dir = tempfile::tempdir().unwrap();
    let (log, env) = peer_log(dir.path());
    let llm = ScriptedLlm::native();
    llm.tool_calls(&[("c1", "peer__crash", "{}")]);
    llm.text("it crashed");
    llm.tool_calls(&[("c2", "peer__echo", r#"{"text":"again"}"#)]);
    llm.text("back");
    // A timeout far above any wait here: the error must come from the exit, not the timeout.
    let toml = python_server("peer", "mcp_peer.py", &format!("timeout_s = 300\n{env}"));
    let app = app_with(llm, &toml).await;
    let events = run(&app, "crash it").await;
    let end = tool_end(&events, "c1");
    assert_eq!(end["error"], true, "{end}");
    assert!(
        end["observation"].as_str().unwrap().contains("closed"),
        "{end}"
    );
    assert!(end["duration_ms"].as_u64().unwrap() < 300_000, "{end}");
    // Not replayed: the peer saw exactly one crash call.
    assert_eq!(read_log(&log).matches("crash").count(), 1);
    wait_state(&app, "peer", "ready").await;
    let events = run(&app, "again").await;
    let end = tool_end(&events, "c2");
    assert_eq!(end["observation"], "echo: again", "{end}");
    assert_eq!(
        read_log(&log).matches("start pid").count(),
        2,
        "restarted once"
    );
    assert_eq!(read_log(&log).matches("crash").count(), 1, "never replayed");
    app.stop().await;
}

#[tokio::test]
async fn a_hung_call_times_out_and_the_server_gets_the_cancel() {
    let dir = tempfile::tempdir().unwrap();
    let (log, env) = peer_log(dir.path());
    let llm = ScriptedLlm::native();
    llm.tool_calls(&[("c1", "peer__hang", "{}")]);
    llm.text("gave up");
    let toml = python_server("peer", "mcp_peer.py", &format!("timeout_s = 1\n{env}"));
    let app = app_with(llm, &toml).await;
    let events = run(&app, "hang").await;
    let end = tool_end(&events, "c1");
    assert_eq!(end["error"], true, "{end}");
    assert!(
        end["observation"].as_str().unwrap().contains("within 1 s"),
        "{end}"
    );
    crate::support::eventually("the peer saw the cancel", || async {
        read_log(&log).contains("hang cancelled")
    })
    .await;
    // The session survives a timed-out call.
    assert_eq!(server_status(&app, "peer").await["state"], "ready");
    app.stop().await;
}

#[tokio::test]
async fn a_failed_refresh_marks_the_tools_unavailable_instead_of_serving_a_stale_list() {
    let dir = tempfile::tempdir().unwrap();
    let (_log, env) = peer_log(dir.path());
    let llm = ScriptedLlm::native();
    llm.tool_calls(&[("c1", "peer__break_list", "{}")]);
    llm.text("broken");
    llm.tool_calls(&[("c2", "peer__echo", r#"{"text":"stale?"}"#)]);
    llm.text("refused");
    let app = app_with(llm, &python_server("peer", "mcp_peer.py", &env)).await;
    let events = run(&app, "break it").await;
    assert_eq!(tool_end(&events, "c1")["observation"], "broken");
    let status = crate::support::eventually("the refresh failure reported", || async {
        let s = server_status(&app, "peer").await;
        let error = s["last_error"].as_str().unwrap_or_default().to_string();
        if s["state"] != "ready" && error.contains("tools/list") {
            Ok(s)
        } else {
            Err(s.to_string())
        }
    })
    .await;
    assert!(
        status["last_error"]
            .as_str()
            .unwrap()
            .contains("broken on purpose"),
        "{status}"
    );
    let events = run(&app, "call it").await;
    let end = tool_end(&events, "c2");
    assert_eq!(end["error"], true, "{end}");
    assert!(
        end["observation"]
            .as_str()
            .unwrap()
            .contains("not available"),
        "{end}"
    );
    app.stop().await;
}

#[tokio::test]
async fn cancelling_a_run_mid_call_cancels_the_request_on_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let (log, env) = peer_log(dir.path());
    let llm = ScriptedLlm::native();
    llm.tool_calls(&[("c1", "peer__hang", "{}")]);
    llm.text("unused");
    let toml = python_server("peer", "mcp_peer.py", &format!("timeout_s = 300\n{env}"));
    let app = app_with(llm, &toml).await;
    let conv = app.create_conversation(None).await;
    let run = app
        .start_run(&conv, serde_json::json!({"query": "hang"}), None)
        .await;
    crate::support::eventually("the peer is in the call", || async {
        read_log(&log).contains("hang started")
    })
    .await;
    app.cancel(&run).await;
    crate::support::eventually("the peer saw the cancel", || async {
        read_log(&log).contains("hang cancelled")
    })
    .await;
    app.stop().await;
}
