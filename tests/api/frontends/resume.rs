//! `GET /ai-sdk/{agent}/{id}/stream` with the `ai` package's own
//! `DefaultChatTransport.reconnectToStream` (`tests/peers/ai_sdk_resume.mjs`): a chat whose
//! client went away mid-run gets the run replayed from its start and followed to its end; an
//! idle or unknown chat gets 204 (the transport's "no active stream").

use futures::StreamExt;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};

use super::{app, ALICE, BOB};
use crate::support::app::error_code;
use crate::support::peers;
use crate::support::wait::eventually;

fn types(chunks: &Value) -> Vec<&str> {
    chunks
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["type"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn a_reconnect_replays_the_active_run_and_an_idle_chat_answers_204() {
    let app = app().await;
    app.llm.tool_calls(&[("g1", "gate", "{}")]);
    app.llm.text("brief");
    app.llm
        .push_stream(reagent::testing::scripted::Turn::Stream(
            vec!["Gate ".into(), "opened.".into()],
            None,
        ));
    let chat = "resumable-chat";
    let body = json!({"id": chat, "trigger": "submit-message", "messages": [
        {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "open the gate"}]}]});
    let r = app.post("/ai-sdk/helper", body, None).await;
    assert_eq!(r.status(), 200);
    // The page reloads: its stream is gone, the run (waiting on the gate) goes on.
    let mut stream = r.bytes_stream();
    stream.next().await.unwrap().unwrap();
    drop(stream);

    let mut child = tokio::process::Command::new("node")
        .arg(peers::dir().join("ai_sdk_resume.mjs"))
        .args([app.url("/ai-sdk/helper"), ALICE.into(), chat.into()])
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("node starts");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next_line().await.unwrap().unwrap();
    assert_eq!(first, "connected", "no active stream found");
    app.gate.release();
    let last = lines.next_line().await.unwrap().unwrap();
    let seen: Value = serde_json::from_str(&last).unwrap();
    assert!(child.wait().await.unwrap().success());

    assert_eq!(seen["unknown"], Value::Null, "an unknown chat: 204");
    let chunks = &seen["chunks"];
    assert_eq!(
        types(chunks),
        [
            "start",
            "start-step",
            "tool-input-start",
            "tool-input-available",
            "tool-output-available",
            "text-start",
            "text-delta",
            "text-delta",
            "text-end",
            "finish-step",
            "finish",
        ],
        "{chunks}"
    );
    assert_eq!(chunks[4]["output"], "gate opened");
    assert_eq!(chunks[10]["finishReason"], "stop");

    // Once the run is over the chat is idle; another tenant does not learn about it.
    let path = format!("/ai-sdk/helper/{chat}/stream");
    eventually("the chat is idle", || async {
        app.get(&path, None).await.status() == 204
    })
    .await;
    let conversation = seen["chunks"][0]["messageMetadata"]["conversationId"]
        .as_str()
        .unwrap()
        .to_string();
    let r = app
        .get(&format!("/ai-sdk/helper/{conversation}/stream"), Some(BOB))
        .await;
    assert_eq!(error_code(r, 404).await, "not_found");
    let r = app.get("/ai-sdk/nobody/x/stream", None).await;
    assert_eq!(error_code(r, 404).await, "not_found");
}
