//! Start-up with servers that cannot start, collide or misbehave: reagent serves regardless,
//! names the problem, and never panics on what a server sends.

use std::collections::HashMap;

use reagent::app::{App, AppOverrides};
use reagent::config::Config;
use reagent::testing::scripted::ScriptedLlm;

use super::{app_with, python_server, run, server_status, tool_end};

#[tokio::test]
async fn a_server_that_cannot_start_leaves_reagent_serving_and_is_named() {
    let llm = ScriptedLlm::native();
    llm.tool_calls(&[("c1", "echo", r#"{"text":"still here"}"#)]);
    llm.text("fine");
    let toml = format!(
        "{}{}",
        python_server(
            "broken",
            "mcp_peer.py",
            "env = { MCP_PEER_FAIL_START = \"1\" }"
        ),
        "[[mcp]]\nname = \"missing\"\ncommand = \"/nonexistent/mcp-server\"\n"
    );
    let app = app_with(llm, &toml).await;
    let broken = server_status(&app, "broken").await;
    assert!(
        matches!(broken["state"].as_str(), Some("failed" | "restarting")),
        "{broken}"
    );
    assert!(
        broken["last_error"].as_str().is_some_and(|e| !e.is_empty()),
        "{broken}"
    );
    let missing = server_status(&app, "missing").await;
    assert!(
        missing["last_error"]
            .as_str()
            .unwrap_or_default()
            .contains("/nonexistent/mcp-server"),
        "{missing}"
    );
    assert_eq!(app.get("/readyz", None).await.status(), 200, "not required");
    let events = run(&app, "go").await;
    let c1 = tool_end(&events, "c1");
    assert!(
        c1["observation"].as_str().unwrap().contains("still here"),
        "{c1}"
    );
    app.stop().await;
}

#[tokio::test]
async fn readyz_waits_for_a_required_server() {
    let toml =
        "[[mcp]]\nname = \"needed\"\ncommand = \"/nonexistent/mcp-server\"\nrequired = true\n";
    let app = app_with(ScriptedLlm::native(), toml).await;
    let r = app.get("/readyz", None).await;
    assert_eq!(r.status(), 503);
    assert!(r.text().await.unwrap().contains("needed"));
    app.stop().await;
}

#[tokio::test]
async fn a_name_collision_fails_start_up_naming_both_tools() {
    let dir = tempfile::tempdir().unwrap();
    // `c` + `x__y` and `c__x` + `y` both become `c__x__y`.
    let toml = format!(
        "{}{}",
        python_server("c", "mcp_peer.py", "env = { MCP_PEER_TOOLS = \"x__y\" }"),
        python_server("c__x", "mcp_peer.py", "env = { MCP_PEER_TOOLS = \"y\" }"),
    );
    let env = HashMap::from([(
        "DATABASE_URL".to_string(),
        format!("sqlite://{}", dir.path().join("r.db").display()),
    )]);
    let config = Config::load_from(Some(&toml), &env).unwrap();
    let err = match App::build(config, AppOverrides::default()).await {
        Ok(_) => panic!("start-up accepted two tools named c__x__y"),
        Err(e) => e.to_string(),
    };
    assert!(err.contains("c__x__y"), "{err}");
    assert!(
        err.contains("'c' tool 'x__y'") && err.contains("'c__x' tool 'y'"),
        "{err}"
    );
}

#[tokio::test]
async fn a_name_taken_by_an_http_tool_fails_start_up_too() {
    let dir = tempfile::tempdir().unwrap();
    let toml = format!(
        "[[tools.http]]\nname = \"peer__echo\"\ndescription = \"d\"\nurl = \"http://127.0.0.1:9/x\"\n\n{}",
        python_server("peer", "mcp_peer.py", "")
    );
    let env = HashMap::from([(
        "DATABASE_URL".to_string(),
        format!("sqlite://{}", dir.path().join("r.db").display()),
    )]);
    let config = Config::load_from(Some(&toml), &env).unwrap();
    let err = match App::build(config, AppOverrides::default()).await {
        Ok(_) => panic!("start-up accepted an MCP tool named like an HTTP tool"),
        Err(e) => e.to_string(),
    };
    assert!(err.contains("the http tool 'peer__echo'"), "{err}");
    assert!(err.contains("MCP server 'peer' tool 'echo'"), "{err}");
}

#[tokio::test]
async fn bad_input_from_a_server_is_an_error_observation_or_a_skipped_tool() {
    let llm = ScriptedLlm::native();
    llm.tool_calls(&[("c1", "bad__huge", "{}")]);
    llm.tool_calls(&[("c2", "bad__garbage", "{}")]);
    llm.tool_calls(&[("c3", "bad__bad_schema", "{}")]);
    llm.text("survived");
    let toml = python_server("bad", "mcp_bad_peer.py", "timeout_s = 2");
    let app = app_with(llm, &toml).await;
    let status = server_status(&app, "bad").await;
    let tools: Vec<&str> = status["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t.as_str())
        .collect();
    assert!(
        tools.contains(&"bad__ok") && !tools.contains(&"bad__bad_schema"),
        "{status}"
    );
    let events = run(&app, "go").await;
    let huge = tool_end(&events, "c1");
    assert_eq!(huge["error"], false, "{huge}");
    let sent = app
        .llm
        .chat_requests()
        .iter()
        .flat_map(|r| r.messages.to_vec())
        .find(|m| m.tool_call_id.as_deref() == Some("c1"))
        .map(|m| m.content)
        .unwrap();
    assert!(
        sent.len() < 300 * 1024,
        "the model got {} bytes",
        sent.len()
    );
    assert_eq!(tool_end(&events, "c2")["error"], true);
    let c3 = tool_end(&events, "c3");
    assert_eq!(c3["error"], true, "an unlisted tool is unknown: {c3}");
    app.stop().await;
}
