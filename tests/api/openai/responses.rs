//! The Responses API (docs/protocols.md): the official Python SDK through a whole scenario
//! (`tests/peers/openai_responses.py`), and with plain HTTP on both backends, the event stream's
//! order and numbering, reproduced exactly by a replay and a resume after any number.

use std::time::Duration;

use futures::StreamExt;
use reagent::llm::ToolCall;
use reagent::testing::scripted::{response, Turn};
use serde_json::{json, Value};

use super::{run_json, ALICE, BOB};
use crate::support::app::{Options, TestApp};
use crate::support::eventually;

mod python_sdk;

on_both_backends!(a_replay_and_a_resume_reproduce_the_stream_exactly);

pub(super) fn stream(chunks: &[&str]) -> Turn {
    Turn::Stream(chunks.iter().map(|c| c.to_string()).collect(), None)
}

pub(super) fn delayed(content: &str, ms: u64) -> Turn {
    Turn::Reply(response(content, vec![]), Duration::from_millis(ms))
}

/// A call of `name` with `arguments`, as the model makes it.
pub(super) fn call(id: &str, name: &str, arguments: &str) -> Turn {
    let call = ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: arguments.into(),
    };
    Turn::Reply(response("", vec![call]), Duration::ZERO)
}

/// The `helper` agent (echo tools) on the scripted model, alice's and bob's keys, on `db`.
pub(super) async fn app_on(db: Option<String>) -> TestApp {
    let mut app = TestApp::with(Options {
        db_url: db,
        env: vec![("REAGENT_API_KEYS", format!("alice:{ALICE},bob:{BOB}"))],
        toml: r#"
[[models]]
name = "scripted"

[[agents]]
name = "helper"
model = "scripted"
system_prompt = "You are helpful."
tools = ["ech*"]

[[agents]]
name = "capped"
model = "scripted"
tools = ["ech*"]
max_iterations = 1
"#
        .into(),
        keep_alive: Duration::from_millis(200),
        ..Options::default()
    })
    .await;
    app.key = Some(ALICE.into());
    app
}

/// The stream events a message answer after one tool call goes through.
pub(super) const TOOL_THEN_ANSWER: [&str; 12] = [
    "response.created",
    "response.in_progress",
    "response.output_item.added",
    "response.output_item.done",
    "response.output_item.added",
    "response.content_part.added",
    "response.output_text.delta",
    "response.output_text.delta",
    "response.output_text.done",
    "response.content_part.done",
    "response.output_item.done",
    "response.completed",
];

pub(super) fn types(events: &Value) -> Vec<String> {
    events
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap().to_string())
        .collect()
}

pub(super) fn seqs(events: &Value) -> Vec<u64> {
    events
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["seq"].as_u64().unwrap())
        .collect()
}

pub(super) fn run_of(response_id: &Value) -> String {
    response_id
        .as_str()
        .unwrap()
        .strip_prefix("resp_")
        .unwrap()
        .to_string()
}

#[tokio::test]
async fn the_python_sdk_creates_streams_continues_forks_resumes_and_cancels() {
    let app = app_on(None).await;
    python_sdk::script_the_scenario(&app);
    let seen = python_sdk::run_the_peer(&app).await;
    python_sdk::plain_response(&app, &seen["plain"]).await;
    python_sdk::streamed_response(&seen["streamed"]);
    python_sdk::continued_forked_and_joined(&app, &seen).await;
    python_sdk::background_cancelled_and_refused(&seen);
    python_sdk::caller_tools(&app, &seen).await;
}

/// `(event, data)` of an SSE body, checking the framing: no `id:`, `event:` = `type`, `[DONE]`
/// last.
pub(super) fn frames(body: &str) -> Vec<Value> {
    assert!(body.ends_with("data: [DONE]\n\n"), "{body}");
    let mut out = Vec::new();
    for block in body
        .split("\n\n")
        .filter(|b| !b.is_empty() && !b.starts_with(':'))
    {
        if block == "data: [DONE]" {
            continue;
        }
        assert!(
            !block.contains("\nid:") && !block.starts_with("id:"),
            "{block}"
        );
        let (event, data) = block.split_once('\n').unwrap();
        let data: Value = serde_json::from_str(data.strip_prefix("data: ").unwrap()).unwrap();
        assert_eq!(
            event.strip_prefix("event: ").unwrap(),
            data["type"],
            "{block}"
        );
        out.push(data);
    }
    out
}

async fn a_replay_and_a_resume_reproduce_the_stream_exactly(db: String) {
    let app = app_on(Some(db)).await;
    app.llm.tool_calls(&[("c1", "echo", r#"{"text":"x"}"#)]);
    app.llm.text("brief");
    app.llm.push_stream(stream(&["One ", "two."]));
    let r = app
        .post(
            "/v1/responses",
            json!({"model": "helper", "input": "go", "stream": true}),
            None,
        )
        .await;
    assert_eq!(r.status(), 200);
    let live = r.text().await.unwrap();
    let live_frames = frames(&live);
    let kinds: Vec<&str> = live_frames
        .iter()
        .map(|f| f["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, TOOL_THEN_ANSWER);
    for (i, f) in live_frames.iter().enumerate() {
        assert_eq!(f["sequence_number"], i as u64);
    }
    let id = live_frames[0]["response"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let get = |query: String| {
        let (app, id) = (&app, &id);
        async move {
            let r = app.get(&format!("/v1/responses/{id}{query}"), None).await;
            assert_eq!(r.status(), 200);
            r.text().await.unwrap()
        }
    };
    // The replay of the finished run is the live stream, byte for byte (keep-alives aside).
    let quiet = |s: &str| s.replace(": keep-alive\n\n", "");
    assert_eq!(quiet(&get("?stream=true".into()).await), quiet(&live));
    for after in [0u64, 3, 6, 10, 11] {
        let resumed = frames(&get(format!("?stream=true&starting_after={after}")).await);
        let expected: Vec<Value> = live_frames
            .iter()
            .skip(after as usize + 1)
            .cloned()
            .collect();
        assert_eq!(resumed, expected, "starting_after={after}");
    }
    // The polled object is the completed event's.
    let polled: Value = serde_json::from_str(&get(String::new()).await).unwrap();
    assert_eq!(polled, live_frames.last().unwrap()["response"]);
    assert_eq!(polled["status"], "completed");
    assert_eq!(polled["output"][1]["content"][0]["text"], "One two.");
}

/// Starts a streamed response whose model answers after `ms`, reads its first events and hangs
/// up; returns the run id.
async fn stream_and_hang_up(app: &TestApp, background: bool) -> String {
    let r = app
        .post(
            "/v1/responses",
            json!({"model": "helper", "input": "slow", "stream": true, "background": background}),
            None,
        )
        .await;
    assert_eq!(r.status(), 200);
    let run = r.headers()["x-reagent-run-id"]
        .to_str()
        .unwrap()
        .to_string();
    let mut body = r.bytes_stream();
    let mut seen = String::new();
    while !seen.contains("response.in_progress") {
        let chunk = body.next().await.expect("the stream stays open").unwrap();
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    drop(body);
    run
}

#[tokio::test]
async fn a_foreground_stream_dropped_cancels_its_run_a_background_one_does_not() {
    let app = app_on(None).await;
    app.llm.push(delayed("brief", 1500));
    let run = stream_and_hang_up(&app, false).await;
    eventually("the foreground run is cancelled", || async {
        (run_json(&app, &run).await["status"] == "cancelled").then_some(())
    })
    .await;
    app.llm.push(delayed("brief", 600));
    app.llm.push_stream(stream(&["Kept."]));
    let run = stream_and_hang_up(&app, true).await;
    let stored = eventually("the background run completes", || async {
        let stored = run_json(&app, &run).await;
        (stored["status"] != "running").then_some(stored)
    })
    .await;
    assert_eq!(stored["status"], "completed");
    let polled = app
        .get_json(&format!("/v1/responses/resp_{run}"), None)
        .await;
    assert_eq!(polled["status"], "completed");
    assert_eq!(polled["output"][0]["content"][0]["text"], "Kept.");
}
