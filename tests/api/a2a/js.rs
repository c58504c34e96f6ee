//! The official `@a2a-js/sdk` client (pinned in `tests/peers/package.json`) against a reagent
//! agent: a streamed send, get, and a non-streaming follow-up in the same context, on the
//! SDK's 1.0 transport and on its 0.3 one.

use serde_json::Value;

use super::{app, ALICE};

async fn flow(v03: bool) {
    let app = app().await;
    app.llm.tool_calls(&[("c1", "echo", r#"{"text":"x"}"#)]);
    app.llm.text("brief").stream_text(&["from ", "reagent"]);
    app.llm.text("brief").stream_text(&["second answer"]);
    let mut node = tokio::process::Command::new("node");
    node.arg(crate::support::peers::dir().join("a2a_client.mjs"))
        .args([app.url("/a2a/helper"), ALICE.into()]);
    if v03 {
        node.arg("v03");
    }
    let out = node.output().await.expect("node starts");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "a2a_client.mjs failed: {stderr}");
    let seen: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(seen["card"]["name"], "helper", "{seen}");
    let s = &seen["stream"];
    assert_eq!(s["kinds"][0], "task", "{seen}");
    assert!(
        s["kinds"]
            .as_array()
            .unwrap()
            .iter()
            .any(|k| k == "artifactUpdate"),
        "{seen}"
    );
    assert_eq!(s["states"][0], "TASK_STATE_SUBMITTED", "{seen}");
    let states = s["states"].as_array().unwrap();
    assert_eq!(states.last().unwrap(), "TASK_STATE_COMPLETED", "{seen}");
    assert_eq!(s["answer"], "from reagent", "{seen}");
    assert_eq!(seen["get"]["state"], "TASK_STATE_COMPLETED", "{seen}");
    assert_eq!(seen["get"]["answer"], "from reagent", "{seen}");
    let f = &seen["followUp"];
    assert_eq!(f["state"], "TASK_STATE_COMPLETED", "{seen}");
    assert_eq!(f["answer"], "second answer", "{seen}");
    assert_eq!(f["contextId"], s["contextId"], "{seen}");
    assert_ne!(f["taskId"], s["taskId"], "{seen}");
}

#[tokio::test]
async fn the_js_sdk_streams_gets_and_follows_up_in_a_context() {
    flow(false).await;
}

#[tokio::test]
async fn the_js_sdks_0_3_transport_does_the_same() {
    flow(true).await;
}
