//! `@modelcontextprotocol/server-everything` (npm, pinned in tests/peers/package.json), the
//! reference server, over stdio and over streamable HTTP.

use std::time::Duration;

use reagent::testing::scripted::ScriptedLlm;
use tokio::process::Command;

use super::{app_with, run, server_status, tool_end};
use crate::support::peers;

fn entry() -> String {
    peers::node_module("@modelcontextprotocol/server-everything/dist/index.js")
        .display()
        .to_string()
}

fn script(llm: &ScriptedLlm, prefix: &str) {
    llm.tool_calls(&[
        (
            "c1",
            &format!("{prefix}__echo"),
            r#"{"message":"hi there"}"#,
        ),
        ("c2", &format!("{prefix}__get-sum"), r#"{"a":2,"b":3}"#),
    ]);
    llm.text("done");
}

#[tokio::test]
async fn over_stdio() {
    let llm = ScriptedLlm::native();
    script(&llm, "every");
    let toml = format!(
        "[[mcp]]\nname = \"every\"\ncommand = \"node\"\nargs = [{:?}]\n",
        entry()
    );
    let app = app_with(llm, &toml).await;
    assert_eq!(server_status(&app, "every").await["state"], "ready");
    let events = run(&app, "go").await;
    let echo = tool_end(&events, "c1");
    assert!(
        echo["observation"].as_str().unwrap().contains("hi there"),
        "{echo}"
    );
    let sum = tool_end(&events, "c2");
    assert!(sum["observation"].as_str().unwrap().contains('5'), "{sum}");
    app.stop().await;
}

/// server-everything in streamable HTTP mode on `port`, once it accepts connections.
async fn http_server(port: u16) -> tokio::process::Child {
    let server = Command::new("node")
        .arg(entry())
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .kill_on_drop(true)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    crate::support::eventually("server-everything listening", || async {
        tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
    })
    .await;
    server
}

fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

async fn stop(mut server: tokio::process::Child) {
    let _ = server.start_kill();
    let _ = tokio::time::timeout(Duration::from_secs(10), server.wait()).await;
}

#[tokio::test]
async fn over_streamable_http() {
    let port = free_port();
    let server = http_server(port).await;
    let url = format!("http://127.0.0.1:{port}/mcp");
    let llm = ScriptedLlm::native();
    script(&llm, "web");
    let toml = format!(
        "[[mcp]]\nname = \"web\"\nurl = {url:?}\nheaders = {{ X-Test = \"yes\" }}\ntimeout_s = 30\n"
    );
    let app = app_with(llm, &toml).await;
    let status = server_status(&app, "web").await;
    assert_eq!(status["state"], "ready", "{status}");
    assert_eq!(status["transport"], "http");
    let events = run(&app, "go").await;
    let echo = tool_end(&events, "c1");
    assert!(
        echo["observation"].as_str().unwrap().contains("hi there"),
        "{echo}"
    );
    assert!(tool_end(&events, "c2")["observation"]
        .as_str()
        .unwrap()
        .contains('5'));
    app.stop().await;
    stop(server).await;
}

#[tokio::test]
async fn an_http_server_that_restarts_is_reconnected() {
    let port = free_port();
    let server = http_server(port).await;
    let llm = ScriptedLlm::native();
    llm.tool_calls(&[("c1", "web__echo", r#"{"message":"while down"}"#)]);
    llm.text("it was down");
    llm.tool_calls(&[("c2", "web__echo", r#"{"message":"back"}"#)]);
    llm.text("it is back");
    let toml =
        format!("[[mcp]]\nname = \"web\"\nurl = \"http://127.0.0.1:{port}/mcp\"\ntimeout_s = 5\n");
    let app = app_with(llm, &toml).await;
    assert_eq!(server_status(&app, "web").await["state"], "ready");
    stop(server).await;
    let events = run(&app, "call it").await;
    let down = tool_end(&events, "c1");
    assert_eq!(down["error"], true, "{down}");
    // Refused at once, not after timeout_s.
    assert!(
        !down["observation"].as_str().unwrap().contains("within"),
        "{down}"
    );
    let server = http_server(port).await;
    super::wait_state(&app, "web", "ready").await;
    let events = run(&app, "again").await;
    let end = tool_end(&events, "c2");
    assert!(
        end["observation"].as_str().unwrap().contains("back"),
        "{end}"
    );
    app.stop().await;
    stop(server).await;
}
