//! The official Python SDK's whole scenario (`tests/peers/openai_responses.py`): the model's
//! script, the peer's run, and one checker per part of what it saw.

use serde_json::{json, Value};

use super::super::{messages, run_json, ALICE, BOB};
use super::{call, delayed, run_of, seqs, stream, types, TOOL_THEN_ANSWER};
use crate::support::app::TestApp;
use crate::support::peers;

/// Queues the model's turns in the order the peer asks for them.
pub(super) fn script_the_scenario(app: &TestApp) {
    let echo = |id: &str| call(id, "echo", r#"{"text":"hi"}"#);
    // plain; streamed (one tool call); continued; forked; by conversation; background (a tool
    // call, then a slow turn); the cancelled one (slower still).
    app.llm.text("brief");
    app.llm.push_stream(stream(&["Plain ", "answer."]));
    app.llm.push(echo("c1"));
    app.llm.text("brief");
    app.llm.push_stream(stream(&["Streamed ", "answer."]));
    for answer in ["Continued.", "Forked.", "Via conversation."] {
        app.llm.text("brief");
        app.llm.push_stream(stream(&[answer]));
    }
    app.llm.push(echo("c2"));
    app.llm.push(delayed("brief", 1500));
    app.llm.push_stream(stream(&["Background ", "done."]));
    app.llm.push(delayed("brief", 5000));
    // The caller tool round trips: the model calls get_weather, then answers from its output.
    for (id, answer) in [("w1", "It is sunny."), ("w2", "Still sunny.")] {
        app.llm.push(call(id, "get_weather", r#"{"city":"Oslo"}"#));
        app.llm.text("brief");
        app.llm.push_stream(stream(&[answer]));
    }
}

/// Runs `openai_responses.py` against the app; the JSON it printed.
pub(super) async fn run_the_peer(app: &TestApp) -> Value {
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
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The plain response: its fields, its usage as stored, and the instructions the model got.
pub(super) async fn plain_response(app: &TestApp, plain: &Value) {
    assert_eq!(plain["object"], "response");
    assert_eq!(plain["status"], "completed");
    assert_eq!(plain["model"], "helper");
    assert_eq!(plain["text"], "Plain answer.");
    assert_eq!(plain["types"], json!(["message"]));
    assert_eq!(plain["metadata"], json!({"ticket": "42"}));
    assert!(plain["completed_at"].is_number(), "{plain}");
    let run = run_of(&plain["id"]);
    assert_eq!(plain["run_header"], run.as_str());
    let stored = run_json(app, &run).await;
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
}

/// The streamed response: its events in order and numbered, and its tool call as an MCP call.
pub(super) fn streamed_response(streamed: &Value) {
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
}

/// Continued in the same conversation; an earlier response forks it; `conversation` joins.
pub(super) async fn continued_forked_and_joined(app: &TestApp, seen: &Value) {
    let streamed = &seen["streamed"];
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
    let contents: Vec<String> = messages(app, forked)
        .await
        .into_iter()
        .map(|m| m.2)
        .collect();
    assert_eq!(
        contents,
        ["use a tool", "Streamed answer.", "other way", "Forked."]
    );
    assert_eq!(seen["by_conversation"]["conversation"], conv);
    assert_eq!(messages(app, conv).await.len(), 6);
}

/// The background response resumed, the cancelled one, input items, and the refusals.
pub(super) fn background_cancelled_and_refused(seen: &Value) {
    // Background: nothing lost or repeated across the dropped stream and its resume.
    assert_eq!(seen["background_created"]["status"], "in_progress");
    let (first, rest) = (&seen["background_first"], &seen["background_rest"]);
    let mut all = types(first);
    all.extend(types(rest));
    assert_eq!(all, TOOL_THEN_ANSWER);
    let n = TOOL_THEN_ANSWER.len() as u64;
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
}

/// Caller tools: a function_call item, the response completed; its output continues it.
pub(super) async fn caller_tools(app: &TestApp, seen: &Value) {
    let caller = &seen["caller"];
    assert_eq!(caller["asked"]["status"], "completed");
    assert_eq!(caller["asked"]["types"], json!(["function_call"]));
    assert_eq!(caller["call"]["name"], "get_weather");
    assert_eq!(caller["call"]["arguments"], r#"{"city":"Oslo"}"#);
    assert_eq!(caller["call"]["status"], "completed");
    assert_eq!(
        run_json(app, &run_of(&caller["asked"]["id"])).await["status"],
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
