//! `[[mcp]]` globs wired into the existing hooks and tool selection: `tools` is an allow-list,
//! `writes` tools are blocked by the `read_only` hook, `requires_approval` ones pause the run;
//! an `[[agents]]` tool glob (`peer__ech*`) selects MCP tools like any other.

use reagent::testing::scripted::ScriptedLlm;

use super::{app_with, python_server, run, server_status, tool_end};

#[tokio::test]
async fn allow_list_writes_and_the_read_only_hook() {
    let llm = ScriptedLlm::native();
    llm.tool_calls(&[
        ("c1", "peer__add_tool", "{}"),
        ("c2", "peer__echo", r#"{"text":"hi"}"#),
    ]);
    llm.text("done");
    let mcp = python_server(
        "peer",
        "mcp_peer.py",
        "tools = [\"echo\", \"add_*\"]\nwrites = [\"add_*\"]",
    );
    let toml = format!("{mcp}[[hooks]]\nkind = \"read_only\"\n");
    let app = app_with(llm, &toml).await;
    let status = server_status(&app, "peer").await;
    let mut tools: Vec<&str> = status["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t.as_str())
        .collect();
    tools.sort();
    assert_eq!(tools, ["peer__add_tool", "peer__echo"], "{status}");
    let events = run(&app, "go").await;
    let blocked = tool_end(&events, "c1");
    assert_eq!(blocked["blocked"], true, "{blocked}");
    let echo = tool_end(&events, "c2");
    assert_eq!(
        (echo["blocked"].clone(), echo["observation"].clone()),
        (false.into(), "echo: hi".into()),
        "{echo}"
    );
    app.stop().await;
}

#[tokio::test]
async fn requires_approval_pauses_the_run() {
    let llm = ScriptedLlm::native();
    llm.tool_calls(&[("c1", "peer__echo", r#"{"text":"hi"}"#)]);
    llm.text("done");
    let toml = python_server("peer", "mcp_peer.py", "requires_approval = [\"echo\"]");
    let app = app_with(llm, &toml).await;
    let conv = app.create_conversation(None).await;
    let run = app
        .start_run(&conv, serde_json::json!({"query": "go"}), None)
        .await;
    let events = app
        .wait_for(&run, |e| e.label() == "step:approval_required")
        .await;
    let asked = events.last().unwrap();
    assert_eq!(asked.data["tool"], "peer__echo", "{:?}", asked.data);
    app.cancel(&run).await;
    app.stop().await;
}

#[tokio::test]
async fn an_agents_tool_globs_select_mcp_tools() {
    let llm = ScriptedLlm::native();
    llm.text("ok");
    let mcp = python_server("peer", "mcp_peer.py", "");
    let toml = format!("{mcp}[[agents]]\nname = \"echoer\"\ntools = [\"peer__ech*\"]\n");
    let app = app_with(llm, &toml).await;
    let r = app
        .post(
            "/api/conversations",
            serde_json::json!({"agent": "echoer"}),
            None,
        )
        .await;
    assert_eq!(r.status(), 201);
    let conv: serde_json::Value = r.json().await.unwrap();
    let run = app
        .start_run(
            conv["id"].as_str().unwrap(),
            serde_json::json!({"query": "hi"}),
            None,
        )
        .await;
    app.events(&run, None).await;
    let request = &app.llm.chat_requests()[0];
    let tools: Vec<&str> = request.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        tools,
        ["peer__echo"],
        "the agent's glob selects the MCP tool"
    );
    app.stop().await;
}
