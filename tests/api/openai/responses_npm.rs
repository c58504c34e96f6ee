//! The Responses API (docs/protocols.md) with the official `openai` npm package
//! (`tests/peers/openai_responses.mjs`): `responses.create`, the `responses.stream` helper to a
//! final text, `previous_response_id`, a caller tool round trip, and a background response whose
//! stream is dropped and resumed with `retrieve(id, {stream: true, starting_after})`.

use reagent::llm::Role;
use serde_json::{json, Value};

use super::responses::{app_on, call, delayed, run_of, seqs, stream, types, TOOL_THEN_ANSWER};
use super::{run_json, ALICE};
use crate::support::peers;

/// The model's turns, in the order the script makes its requests.
fn script(app: &crate::support::app::TestApp) {
    let echo = r#"{"text":"hi"}"#;
    app.llm.text("brief");
    app.llm.push_stream(stream(&["Plain ", "answer."]));
    app.llm.push(call("c1", "echo", echo));
    app.llm.text("brief");
    app.llm.push_stream(stream(&["Streamed ", "answer."]));
    app.llm.text("brief");
    app.llm.push_stream(stream(&["Continued."]));
    app.llm
        .push(call("w1", "get_weather", r#"{"city":"Oslo"}"#));
    app.llm.text("brief");
    app.llm.push_stream(stream(&["It is sunny in Oslo."]));
    app.llm.push(call("c2", "echo", echo));
    app.llm.push(delayed("brief", 1500));
    app.llm.push_stream(stream(&["Background ", "done."]));
}

#[tokio::test]
async fn the_npm_package_creates_streams_continues_calls_back_and_resumes() {
    peers::node_module("openai/package.json");
    let app = app_on(None).await;
    script(&app);
    let out = tokio::process::Command::new("node")
        .arg(peers::dir().join("openai_responses.mjs"))
        .args([app.url("/v1"), ALICE.into(), "helper".into()])
        .output()
        .await
        .expect("node starts");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "openai_responses.mjs failed: {stderr}"
    );
    let seen: Value = serde_json::from_slice(&out.stdout).unwrap();

    let plain = &seen["plain"];
    assert_eq!(
        (&plain["object"], &plain["status"], &plain["text"]),
        (
            &json!("response"),
            &json!("completed"),
            &json!("Plain answer.")
        )
    );
    assert_eq!(plain["model"], "helper");

    let streamed = &seen["streamed"];
    assert_eq!(types(&streamed["events"]), TOOL_THEN_ANSWER);
    let n = TOOL_THEN_ANSWER.len() as u64;
    assert_eq!(seqs(&streamed["events"]), (0..n).collect::<Vec<_>>());
    assert_eq!(streamed["text"], "Streamed answer.");
    assert_eq!(streamed["types"], json!(["mcp_call", "message"]));

    let continued = &seen["continued"];
    assert_eq!(continued["previous_response_id"], streamed["id"]);
    assert_eq!(continued["conversation"], streamed["conversation"]);
    assert_eq!(continued["text"], "Continued.");

    check_caller(&app, &seen["caller"]).await;
    check_background(&seen["background"], n);
}

/// The client got only its own tool's call; its output reached the model as that call's
/// result; the answer continues the same conversation.
async fn check_caller(app: &crate::support::app::TestApp, caller: &Value) {
    assert_eq!(caller["asked"]["types"], json!(["function_call"]));
    assert_eq!(caller["asked"]["status"], "completed");
    let calls = caller["calls"].as_array().unwrap();
    assert_eq!(calls.len(), 1, "{caller}");
    assert_eq!(calls[0]["name"], "get_weather");
    assert_eq!(calls[0]["arguments"], r#"{"city":"Oslo"}"#);
    let asked_run = run_of(&caller["asked"]["id"]);
    assert_eq!(run_json(app, &asked_run).await["status"], "requires_action");
    assert_eq!(caller["answered"]["text"], "It is sunny in Oslo.");
    assert_eq!(
        caller["answered"]["conversation"],
        caller["asked"]["conversation"]
    );
    let requests = app.llm.chat_requests();
    let result = requests
        .iter()
        .flat_map(|r| r.messages.iter())
        .find(|m| m.role == Role::Tool && m.tool_call_id.as_deref() == Some("w1"))
        .map(|m| m.content.clone());
    assert_eq!(result.as_deref(), Some("sunny in Oslo"));
}

/// Nothing lost or repeated across the dropped stream and its resume; polled to completion.
fn check_background(bg: &Value, n: u64) {
    assert_eq!(bg["created"]["status"], "in_progress", "{bg}");
    let (first, rest) = (&bg["first"], &bg["rest"]);
    assert_eq!(
        types(first).last().map(String::as_str),
        Some("response.output_item.done")
    );
    let mut all = types(first);
    all.extend(types(rest));
    assert_eq!(all, TOOL_THEN_ANSWER);
    let mut numbers = seqs(first);
    numbers.extend(seqs(rest));
    assert_eq!(numbers, (0..n).collect::<Vec<_>>());
    assert_eq!(bg["done"]["status"], "completed");
    assert_eq!(bg["done"]["text"], "Background done.");
}
