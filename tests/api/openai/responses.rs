//! The Responses API (docs/protocols.md): the official Python SDK through a whole scenario
//! (`tests/peers/openai_responses.py`), and with plain HTTP on both backends, the event stream's
//! order and numbering, reproduced exactly by a replay and a resume after any number.

use std::time::Duration;

use futures::StreamExt;
use reagent::llm::ToolCall;
use reagent::testing::scripted::{response, Turn};
use serde_json::{json, Value};

use super::{messages, run_json, ALICE, BOB};
use crate::support::app::{Options, TestApp};
use crate::support::eventually;
use crate::support::peers;

on_both_backends!(a_replay_and_a_resume_reproduce_the_stream_exactly);

pub(super) fn stream(chunks: &[&str]) -> Turn {
    Turn::Stream(chunks.iter().map(|c| c.to_string()).collect(), None)
}

pub(super) fn delayed(content: &str, ms: u64) -> Turn {
    Turn::Reply(response(content, vec![]), Duration::from_millis(ms))
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
    let echo = |id: &str| ToolCall {
        id: id.into(),
        name: "echo".into(),
        arguments: r#"{"text":"hi"}"#.into(),
    };
    // plain; streamed (one tool call); continued; forked; by conversation; background (a tool
    // call, then a slow turn); the cancelled one (slower still).
    app.llm.text("brief");
    app.llm.push_stream(stream(&["Plain ", "answer."]));
    app.llm
        .push(Turn::Reply(response("", vec![echo("c1")]), Duration::ZERO));
    app.llm.text("brief");
    app.llm.push_stream(stream(&["Streamed ", "answer."]));
    for answer in ["Continued.", "Forked.", "Via conversation."] {
        app.llm.text("brief");
        app.llm.push_stream(stream(&[answer]));
    }
    app.llm
        .push(Turn::Reply(response("", vec![echo("c2")]), Duration::ZERO));
    app.llm.push(delayed("brief", 1500));
    app.llm.push_stream(stream(&["Background ", "done."]));
    app.llm.push(delayed("brief", 5000));
    // The caller tool round trips: the model calls get_weather, then answers from its output.
    let weather = |id: &str| ToolCall {
        id: id.into(),
        name: "get_weather".into(),
        arguments: r#"{"city":"Oslo"}"#.into(),
    };
    for (id, answer) in [("w1", "It is sunny."), ("w2", "Still sunny.")] {
        app.llm
            .push(Turn::Reply(response("", vec![weather(id)]), Duration::ZERO));
        app.llm.text("brief");
        app.llm.push_stream(stream(&[answer]));
    }
    let args = [app.url("/v1"), ALICE.into(), BOB.into(), "helper".into()];
    // Warnings are errors: an item the SDK does not know prints Pydantic warnings (issue 51).
    let out = tokio::process::Command::new(peers::python())
        .args(["-W", "error"])
        .arg(peers::dir().join("openai_responses.py"))
        .args(args)
        .output()
        .await
        .expect("the peer starts");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "openai_responses.py failed: {stderr}");
    let seen: Value = serde_json::from_slice(&out.stdout).unwrap();

    let plain = &seen["plain"];
    assert_eq!(plain["object"], "response");
    assert_eq!(plain["status"], "completed");
    assert_eq!(plain["model"], "helper");
    assert_eq!(plain["text"], "Plain answer.");
    assert_eq!(plain["types"], json!(["message"]));
    assert_eq!(plain["metadata"], json!({"ticket": "42"}));
    assert!(plain["completed_at"].is_number(), "{plain}");
    let run = run_of(&plain["id"]);
    assert_eq!(plain["run_header"], run.as_str());
    let stored = run_json(&app, &run).await;
    assert_eq!(
        plain["usage"]["input_tokens"],
        stored["usage"]["prompt_tokens"]
    );
    assert_eq!(
        plain["usage"]["output_tokens"],
        stored["usage"]["completion_tokens"]
    );
    assert_eq!(
        plain["usage"]["total_tokens"],
        stored["usage"]["total_tokens"]
    );
    // Instructions and the system message reach the model after the agent's prompt.
    let first = serde_json::to_string(&app.llm.chat_requests()[0].messages).unwrap();
    assert!(
        first.contains("You are helpful.\\n\\nAnswer briefly.\\n\\nBe kind."),
        "{first}"
    );

    let streamed = &seen["streamed"];
    assert_eq!(types(&streamed["events"]), TOOL_THEN_ANSWER);
    let n = TOOL_THEN_ANSWER.len() as u64;
    assert_eq!(seqs(&streamed["events"]), (0..n).collect::<Vec<_>>());
    assert_eq!(streamed["text"], "Streamed answer.");
    assert_eq!(streamed["types"], json!(["mcp_call", "message"]));
    assert_eq!(streamed["tool_class"], "McpCall");
    let tool = &streamed["tool"];
    assert_eq!(tool["server_label"], "reagent", "{tool}");
    assert_eq!(
        (&tool["name"], &tool["status"]),
        (&json!("echo"), &json!("completed"))
    );
    assert!(tool["output"].as_str().unwrap().contains("hi"), "{tool}");

    // Continued in the same conversation; an earlier response forks it; `conversation` joins.
    let conv = streamed["conversation"].as_str().unwrap();
    assert_eq!(seen["continued"]["conversation"], conv);
    assert_eq!(seen["continued"]["previous_response_id"], streamed["id"]);
    assert_eq!(seen["continued"]["text"], "Continued.");
    let forked = seen["forked"]["conversation"].as_str().unwrap();
    assert_ne!(forked, conv);
    let fork = app
        .get_json(&format!("/api/conversations/{forked}"), None)
        .await;
    assert_eq!(
        fork["forked_from"],
        json!({"conversation_id": conv, "run_id": run_of(&streamed["id"])})
    );
    let contents: Vec<String> = messages(&app, forked)
        .await
        .into_iter()
        .map(|m| m.2)
        .collect();
    assert_eq!(
        contents,
        ["use a tool", "Streamed answer.", "other way", "Forked."]
    );
    assert_eq!(seen["by_conversation"]["conversation"], conv);
    assert_eq!(messages(&app, conv).await.len(), 6);

    // Background: nothing lost or repeated across the dropped stream and its resume.
    assert_eq!(seen["background_created"]["status"], "in_progress");
    let (first, rest) = (&seen["background_first"], &seen["background_rest"]);
    let mut all = types(first);
    all.extend(types(rest));
    assert_eq!(all, TOOL_THEN_ANSWER);
    let mut numbers = seqs(first);
    numbers.extend(seqs(rest));
    assert_eq!(numbers, (0..n).collect::<Vec<_>>());
    assert_eq!(seen["background_done"]["status"], "completed");
    assert_eq!(seen["background_done"]["text"], "Background done.");

    assert_eq!(seen["cancelled"]["status"], "cancelled");
    assert_eq!(seen["cancelled_again"], "cancelled");
    assert_eq!(
        seen["input_items"],
        json!([
            {"role": "system", "type": "message", "text": "Be kind."},
            {"role": "user", "type": "message", "text": "hello"},
        ])
    );
    assert_eq!(seen["other_tenant"], 404);
    assert_eq!(seen["deleted"], 404);
    assert_eq!(seen["tools"], json!({"status": 400, "param": "tools"}));

    // Caller tools: a function_call item, the response completed; its output continues it.
    let caller = &seen["caller"];
    assert_eq!(caller["asked"]["status"], "completed");
    assert_eq!(caller["asked"]["types"], json!(["function_call"]));
    assert_eq!(caller["call"]["name"], "get_weather");
    assert_eq!(caller["call"]["arguments"], r#"{"city":"Oslo"}"#);
    assert_eq!(caller["call"]["status"], "completed");
    assert_eq!(
        run_json(&app, &run_of(&caller["asked"]["id"])).await["status"],
        "requires_action"
    );
    assert_eq!(caller["answered"]["text"], "It is sunny.");
    assert_eq!(
        caller["answered"]["conversation"],
        caller["asked"]["conversation"]
    );
    // The caller's output reached the model as the call's result.
    let results = app
        .llm
        .chat_requests()
        .iter()
        .flat_map(|r| r.messages.iter().cloned().collect::<Vec<_>>())
        .filter(|m| serde_json::to_string(m).unwrap().contains("sunny"))
        .count();
    assert!(results >= 1, "no request carried the tool output");
    let streamed = &seen["caller_streamed"];
    let kinds = streamed["events"].as_array().unwrap();
    for kind in [
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
    ] {
        assert!(kinds.contains(&json!(kind)), "{kinds:?}");
    }
    assert_eq!(streamed["asked"]["types"], json!(["function_call"]));
    assert_eq!(streamed["answered"]["text"], "Still sunny.");
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
