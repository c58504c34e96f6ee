//! Every object and event of the Responses API validated against the Open Responses schema
//! (`tests/peers/openresponses_check.py`): a streamed tool run, the iteration cap, errors.

use reagent::testing::scripted::Turn;
use serde_json::{json, Value};

use super::responses::{app_on, delayed, frames, stream};
use crate::support::app::TestApp;
use crate::support::peers;

/// Runs `payloads` (`(kind, value)`) through `tests/peers/openresponses_check.py`: the
/// validation error of each, `None` when valid.
pub(super) async fn schema_errors(payloads: &[(&str, Value)]) -> Vec<Option<String>> {
    use tokio::io::AsyncWriteExt;
    let mut child = tokio::process::Command::new(peers::python())
        .arg(peers::dir().join("openresponses_check.py"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the checker starts");
    let mut input = String::new();
    for (kind, value) in payloads {
        input.push_str(&json!({"kind": kind, "value": value}).to_string());
        input.push('\n');
    }
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input.as_bytes()).await.unwrap();
    drop(stdin);
    let out = child.wait_with_output().await.unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "openresponses_check.py failed: {stderr}"
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The events of a streamed response.
async fn streamed(app: &TestApp, body: Value) -> Vec<Value> {
    let r = app.post("/v1/responses", body, None).await;
    assert_eq!(r.status(), 200);
    frames(&r.text().await.unwrap())
}

#[tokio::test]
async fn every_object_and_event_validates_against_the_open_responses_schema() {
    let app = app_on(None).await;
    let mut payloads: Vec<(&str, Value)> = Vec::new();
    // Completed after a tool call, streamed.
    app.llm.tool_calls(&[("c1", "echo", r#"{"text":"x"}"#)]);
    app.llm.text("brief");
    app.llm.push_stream(stream(&["Done ", "here."]));
    let events = streamed(
        &app,
        json!({"model": "helper", "input": "go", "stream": true}),
    )
    .await;
    // The iteration cap: incomplete.
    app.llm.tool_calls(&[("c2", "echo", r#"{"text":"y"}"#)]);
    app.llm.push_stream(stream(&["Capped."]));
    let capped = streamed(
        &app,
        json!({"model": "capped", "input": "loop", "stream": true}),
    )
    .await;
    assert_eq!(capped.last().unwrap()["type"], "response.incomplete");
    // A provider failure: an error event, then failed.
    app.llm
        .push(Turn::Fail(reagent::llm::LlmError::InvalidResponse(
            "down".into(),
        )));
    let failed = streamed(
        &app,
        json!({"model": "helper", "input": "fail", "stream": true}),
    )
    .await;
    let kinds: Vec<&str> = failed.iter().map(|f| f["type"].as_str().unwrap()).collect();
    assert_eq!(
        kinds[kinds.len() - 2..],
        ["error", "response.failed"],
        "{kinds:?}"
    );
    for e in events.iter().chain(&capped).chain(&failed) {
        payloads.push(("event", e.clone()));
        if let Some(r) = e.get("response") {
            payloads.push(("response", r.clone()));
        }
    }
    // Objects: plain, background at once, cancelled, polled.
    app.llm.text("brief");
    let r = app
        .post(
            "/v1/responses",
            json!({"model": "helper", "input": "hi", "metadata": {"a": "b"}}),
            None,
        )
        .await;
    payloads.push(("response", r.json().await.unwrap()));
    app.llm.push(delayed("brief", 3000));
    let r = app
        .post(
            "/v1/responses",
            json!({"model": "helper", "input": "bg", "background": true}),
            None,
        )
        .await;
    let bg: Value = r.json().await.unwrap();
    assert_eq!(bg["status"], "in_progress");
    let id = bg["id"].as_str().unwrap().to_string();
    payloads.push(("response", bg));
    payloads.push((
        "response",
        app.get_json(&format!("/v1/responses/{id}"), None).await,
    ));
    let r = app
        .post(&format!("/v1/responses/{id}/cancel"), json!({}), None)
        .await;
    let cancelled: Value = r.json().await.unwrap();
    assert_eq!(cancelled["status"], "cancelled");
    payloads.push(("response", cancelled));

    let errors = schema_errors(&payloads).await;
    for ((kind, value), error) in payloads.iter().zip(&errors) {
        assert!(error.is_none(), "{kind} {value}: {error:?}");
    }
    // Broken on purpose, the same payloads fail: no `completed_at`, no `sequence_number`.
    let mut no_completed_at = events.last().unwrap()["response"].clone();
    no_completed_at
        .as_object_mut()
        .unwrap()
        .remove("completed_at");
    let mut no_number = events[6].clone();
    no_number.as_object_mut().unwrap().remove("sequence_number");
    // An `mcp_call` item is checked against the openai SDK's own model: one without its server
    // label fails.
    let mut no_label = events
        .iter()
        .find(|e| e["item"]["type"] == "mcp_call")
        .expect("a tool item event")
        .clone();
    no_label["item"]
        .as_object_mut()
        .unwrap()
        .remove("server_label");
    let errors = schema_errors(&[
        ("response", no_completed_at),
        ("event", no_number),
        ("event", no_label),
    ])
    .await;
    assert!(errors.iter().all(Option::is_some), "{errors:?}");
}
