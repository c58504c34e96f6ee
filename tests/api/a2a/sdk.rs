//! The official `a2a-sdk` Python client (pinned in `tests/peers/requirements.txt`) against a
//! reagent agent: a streamed send, get and a follow-up in the same context; an approval that
//! stops the task at input-required and is answered in the same task; cancel; resubscribe.
//! Each on the SDK's 1.0 transport and on its 0.3 one.

use std::time::Duration;

use reagent::testing::scripted::{response, Turn};
use serde_json::Value;
use tokio::process::Command;

use super::{app, deploy_run, ALICE};
use crate::support::app::TestApp;
use crate::support::peers;

/// Runs `a2a_client.py` against agent `helper`; what it saw.
async fn client(app: &TestApp, scenario: &str, v03: bool) -> Value {
    let mut python = Command::new(peers::python());
    python.arg(peers::dir().join("a2a_client.py")).args([
        app.url("/a2a/helper"),
        ALICE.into(),
        scenario.into(),
    ]);
    if v03 {
        python.arg("v03");
    }
    let out = python.output().await.expect("the peer starts");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "a2a_client.py {scenario} failed: {stderr}"
    );
    let seen: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    assert_eq!(seen["card"]["name"], "helper", "{seen}");
    assert_eq!(seen["card"]["streaming"], true, "{seen}");
    assert_eq!(
        seen["card"]["schemes"],
        serde_json::json!(["bearer"]),
        "{seen}"
    );
    let transport = if v03 {
        "CompatJsonRpcTransport"
    } else {
        "JsonRpcTransport"
    };
    assert_eq!(seen["transport"], transport, "{seen}");
    seen
}

fn strings(v: &Value) -> Vec<&str> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect()
}

async fn flow(v03: bool) {
    let app = app().await;
    app.llm.tool_calls(&[("c1", "echo", r#"{"text":"x"}"#)]);
    app.llm.text("brief").stream_text(&["from ", "reagent"]);
    app.llm.text("brief").stream_text(&["second answer"]);
    let seen = client(&app, "flow", v03).await;
    let s = &seen["stream"];
    let kinds = strings(&s["kinds"]);
    assert_eq!(kinds[0], "task", "{seen}");
    assert!(kinds.contains(&"artifact_update"), "{seen}");
    let states = strings(&s["states"]);
    assert_eq!(states[0], "TASK_STATE_SUBMITTED", "{seen}");
    assert_eq!(states.last(), Some(&"TASK_STATE_COMPLETED"), "{seen}");
    assert_eq!(s["answer"], "from reagent", "{seen}");
    // The tool step is a status message.
    assert!(
        strings(&s["messages"])
            .iter()
            .any(|m| m.starts_with("Calling echo")),
        "{seen}"
    );
    assert_eq!(seen["get"]["state"], "TASK_STATE_COMPLETED", "{seen}");
    assert_eq!(seen["get"]["answer"], "from reagent", "{seen}");
    assert_eq!(seen["get"]["history"][0], "echo x", "{seen}");
    // The follow-up is a new task in the same context (conversation).
    let f = &seen["follow_up"];
    assert_eq!(f["state"], "TASK_STATE_COMPLETED", "{seen}");
    assert_eq!(f["answer"], "second answer", "{seen}");
    assert_eq!(f["context_id"], s["context_id"], "{seen}");
    assert_ne!(f["task_id"], s["task_id"], "{seen}");
    let conversation: Value = app
        .get_json(
            &format!("/api/conversations/{}", s["context_id"].as_str().unwrap()),
            None,
        )
        .await;
    assert_eq!(
        conversation["messages"].as_array().unwrap().len(),
        4,
        "{conversation}"
    );
}

#[tokio::test]
async fn the_python_sdk_streams_gets_and_follows_up_in_a_context() {
    flow(false).await;
}

#[tokio::test]
async fn the_python_sdks_0_3_transport_does_the_same() {
    flow(true).await;
}

async fn approval(v03: bool) {
    let app = app().await;
    deploy_run(&app, "Deployed.");
    let seen = client(&app, "approval", v03).await;
    let asked = &seen["asked"];
    assert_eq!(
        strings(&asked["states"]).last(),
        Some(&"TASK_STATE_INPUT_REQUIRED"),
        "{seen}"
    );
    assert!(
        strings(&asked["messages"])
            .iter()
            .any(|m| m.starts_with("Approve the call to deploy")),
        "{seen}"
    );
    assert_eq!(
        seen["get_waiting"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{seen}"
    );
    let answered = &seen["answered"];
    assert_eq!(answered["task_id"], asked["task_id"], "{seen}");
    assert_eq!(
        strings(&answered["states"]).last(),
        Some(&"TASK_STATE_COMPLETED"),
        "{seen}"
    );
    assert_eq!(answered["answer"], "Deployed.", "{seen}");
    assert!(
        strings(&answered["messages"])
            .iter()
            .any(|m| m.contains("deployed to \"prod\"")),
        "{seen}"
    );
    assert_eq!(seen["get"]["state"], "TASK_STATE_COMPLETED", "{seen}");
}

#[tokio::test]
async fn the_python_sdk_answers_an_approval_in_the_same_task() {
    approval(false).await;
}

#[tokio::test]
async fn the_python_sdks_0_3_transport_answers_an_approval_too() {
    approval(true).await;
}

#[tokio::test]
async fn the_python_sdk_cancels_a_working_task() {
    let app = app().await;
    app.llm.push(Turn::Reply(
        response("late", vec![]),
        Duration::from_secs(60),
    ));
    let seen = client(&app, "cancel", false).await;
    let started = &seen["started"]["state"];
    assert!(
        started == "TASK_STATE_SUBMITTED" || started == "TASK_STATE_WORKING",
        "{seen}"
    );
    assert_eq!(seen["cancelled"], "TASK_STATE_CANCELED", "{seen}");
    assert_eq!(seen["get"]["state"], "TASK_STATE_CANCELED", "{seen}");
}

#[tokio::test]
async fn the_python_sdk_resubscribes_and_answers_after() {
    let app = app().await;
    deploy_run(&app, "Not deployed.");
    let seen = client(&app, "resubscribe", false).await;
    assert_eq!(seen["left"]["kinds"].as_array().unwrap().len(), 2, "{seen}");
    let again = &seen["again"];
    assert_eq!(again["task_id"], seen["left"]["task_id"], "{seen}");
    assert_eq!(strings(&again["kinds"])[0], "task", "{seen}");
    assert_eq!(
        strings(&again["states"]).last(),
        Some(&"TASK_STATE_INPUT_REQUIRED"),
        "{seen}"
    );
    let answered = &seen["answered"];
    assert_eq!(answered["state"], "TASK_STATE_COMPLETED", "{seen}");
    assert_eq!(answered["answer"], "Not deployed.", "{seen}");
}
