use serde_json::{json, Value};
use uuid::Uuid;

use super::encode::AgUi;
use super::*;
use crate::runs::LoggedEvent;
use crate::server::frontends::body::Encoder;

/// Feeds `(name, data)` events; the AG-UI events written and whether the last ended the stream.
fn encode(events: &[(&str, Value)]) -> (Vec<Value>, bool) {
    let mut enc = AgUi::new("t".into(), "r".into(), Uuid::nil());
    let mut out = String::new();
    let mut ended = false;
    for (i, (name, value)) in events.iter().enumerate() {
        assert!(!ended, "nothing after the end");
        let ev = LoggedEvent::stored(i as u64 + 1, name, value.to_string());
        ended = enc.event(&ev, &mut out);
    }
    let parsed = out
        .split("\n\n")
        .filter(|f| !f.is_empty())
        .map(|f| serde_json::from_str(f.strip_prefix("data: ").unwrap()).unwrap())
        .collect();
    (parsed, ended)
}

fn types(events: &[Value]) -> Vec<&str> {
    events.iter().map(|e| e["type"].as_str().unwrap()).collect()
}

fn done(status: &str, answer: &str, error: Option<&str>) -> Value {
    json!({"status": status, "iterations": 1, "tool_calls": 0,
           "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5, "llm_calls": 1},
           "elapsed_ms": 1, "mode": "native", "answer": answer, "error": error,
           "unprocessed_interrupts": []})
}

#[test]
fn a_tool_run_maps_to_tool_calls_reasoning_and_one_text_message() {
    let (events, ended) = encode(&[
        (
            "start",
            json!({"run_id": "x", "conversation_id": "y", "model": "m", "mode": "native"}),
        ),
        (
            "step",
            json!({"type": "thinking", "iteration": 1, "reasoning": "look it up"}),
        ),
        (
            "step",
            json!({"type": "tool_start", "iteration": 1, "call_id": "c1", "tool": "echo", "arguments": {"text": "hi"}}),
        ),
        (
            "step",
            json!({"type": "tool_end", "iteration": 1, "call_id": "c1", "tool": "echo", "observation": "hi",
                        "error": false, "blocked": false, "duration_ms": 1, "artifacts": []}),
        ),
        ("answer", json!({"status": "start"})),
        ("answer", json!({"status": "delta", "content": "Hel"})),
        ("answer", json!({"status": "delta", "content": "lo"})),
        (
            "answer",
            json!({"status": "done", "content": "Hello", "fallback": false}),
        ),
        ("done", done("completed", "Hello", None)),
    ]);
    assert!(ended);
    assert_eq!(
        types(&events),
        [
            "CUSTOM",
            "REASONING_START",
            "REASONING_MESSAGE_START",
            "REASONING_MESSAGE_CONTENT",
            "REASONING_MESSAGE_END",
            "REASONING_END",
            "TOOL_CALL_START",
            "TOOL_CALL_ARGS",
            "TOOL_CALL_END",
            "TOOL_CALL_RESULT",
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_END",
            "RUN_FINISHED",
        ]
    );
    assert_eq!(events[0]["name"], "reagent.start");
    assert_eq!(events[7]["delta"], r#"{"text":"hi"}"#);
    let call = format!("{}-c1", Uuid::nil().simple());
    assert_eq!(events[6]["toolCallId"], call.as_str());
    assert_eq!(events[9]["toolCallId"], call.as_str());
    assert_eq!(events[9]["content"], "hi");
    let last = &events[14];
    assert_eq!(
        (last["threadId"].as_str(), last["runId"].as_str()),
        (Some("t"), Some("r"))
    );
    assert_eq!(last["outcome"], json!({"type": "success"}));
    assert_eq!(last["usage"][0]["totalTokens"], 5);
}

#[test]
fn a_failed_run_ends_with_run_error_only() {
    let (events, ended) = encode(&[
        ("answer", json!({"status": "delta", "content": "partial"})),
        ("done", done("failed", "Sorry.", Some("the model failed"))),
    ]);
    assert!(ended);
    assert_eq!(
        types(&events),
        [
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_END",
            "RUN_ERROR"
        ]
    );
    assert_eq!(events[3]["message"], "the model failed");
}

#[test]
fn an_approval_ends_the_stream_with_an_interrupt_outcome_naming_the_call() {
    let (events, ended) = encode(&[
        (
            "step",
            json!({"type": "tool_start", "iteration": 1, "call_id": "c9", "tool": "deploy", "arguments": {}}),
        ),
        (
            "step",
            json!({"type": "approval_required", "iteration": 1, "approval_id": "a-1", "tool": "deploy", "arguments": {}}),
        ),
    ]);
    assert!(ended, "the stream ends at the approval");
    let last = events.last().unwrap();
    assert_eq!(last["type"], "RUN_FINISHED");
    assert_eq!(last["outcome"]["type"], "interrupt");
    let interrupt = &last["outcome"]["interrupts"][0];
    assert_eq!(interrupt["id"], "a-1");
    assert_eq!(
        interrupt["toolCallId"],
        format!("{}-c9", Uuid::nil().simple())
    );
    assert!(
        types(&events).iter().all(|t| *t != "CUSTOM"),
        "never a CUSTOM interrupt"
    );
}

#[test]
fn dag_steps_open_and_close_and_the_plan_is_state() {
    let (events, _) = encode(&[
        (
            "step",
            json!({"type": "plan", "round": 1, "steps": [
            {"id": "s1", "task": "a", "dependencies": [], "tool_hint": null, "model_hint": null, "model": "m"}]}),
        ),
        (
            "step",
            json!({"type": "dag_step", "round": 1, "step_id": "s1", "status": "running", "model": "m"}),
        ),
        // A step finishing that was never seen running (a resumed stream) is opened first.
        (
            "step",
            json!({"type": "dag_step", "round": 1, "step_id": "s2", "status": "skipped", "model": "m"}),
        ),
        (
            "step",
            json!({"type": "dag_step", "round": 1, "step_id": "s1", "status": "completed", "model": "m", "result": "ok"}),
        ),
        ("done", done("completed", "A", None)),
    ]);
    assert_eq!(
        types(&events),
        [
            "STATE_SNAPSHOT",
            "STEP_STARTED",
            "STATE_SNAPSHOT",
            "STEP_STARTED",
            "STEP_FINISHED",
            "STATE_SNAPSHOT",
            "STEP_FINISHED",
            "STATE_SNAPSHOT",
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_END",
            "RUN_FINISHED",
        ]
    );
    assert_eq!(
        events[7]["snapshot"]["dag"]["steps"][0]["status"],
        "completed"
    );
    assert_eq!(events[7]["snapshot"]["dag"]["steps"][0]["result"], "ok");
}

#[test]
fn resume_entries_approve_unless_rejected_or_cancelled() {
    let entry = |status: &str, payload: Option<Value>| ResumeEntry {
        interrupt_id: "a".into(),
        status: status.into(),
        payload,
    };
    assert!(answer_of(&entry("resolved", None)).unwrap().approve);
    assert!(
        answer_of(&entry("resolved", Some(json!({"approved": true}))))
            .unwrap()
            .approve
    );
    let no = answer_of(&entry(
        "resolved",
        Some(json!({"approved": false, "reason": "no"})),
    ))
    .unwrap();
    assert!(!no.approve);
    assert_eq!(no.reason.as_deref(), Some("no"));
    assert!(!answer_of(&entry("cancelled", None)).unwrap().approve);
    assert!(answer_of(&entry("later", None)).is_err());
}

#[test]
fn text_is_read_from_strings_and_text_parts() {
    assert_eq!(text_of(Some(&json!("hi"))), "hi");
    let parts = json!([{"type": "text", "text": "a"}, {"type": "binary", "mimeType": "image/png"},
                       {"type": "text", "text": "b"}]);
    assert_eq!(text_of(Some(&parts)), "a\nb");
    assert_eq!(text_of(None), "");
}

#[test]
fn text_taken_back_before_a_tool_call_is_a_message_of_its_own_then_the_answer() {
    let (events, ended) = encode(&[
        ("answer", json!({"status": "start", "source": "reply"})),
        (
            "answer",
            json!({"status": "delta", "content": "Let me check."}),
        ),
        ("answer", json!({"status": "reset"})),
        (
            "step",
            json!({"type": "tool_start", "iteration": 1, "call_id": "c1", "tool": "echo", "arguments": {}}),
        ),
        ("answer", json!({"status": "start", "source": "reply"})),
        ("answer", json!({"status": "delta", "content": "It is 42."})),
        (
            "answer",
            json!({"status": "done", "content": "It is 42.", "fallback": false}),
        ),
        ("done", done("completed", "It is 42.", None)),
    ]);
    assert!(ended);
    let texts: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "TEXT_MESSAGE_CONTENT")
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    assert_eq!(
        texts,
        ["Let me check.", "It is 42."],
        "the answer is sent once"
    );
    let ids: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "TEXT_MESSAGE_START")
        .map(|e| e["messageId"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 2);
    assert_ne!(ids[0], ids[1]);
    assert!(events
        .iter()
        .any(|e| e["type"] == "CUSTOM" && e["name"] == "reagent.answer_reset"));
}

/// `cargo test --lib per_delta_cost -- --ignored --nocapture`: the encoder's cost per token.
#[test]
#[ignore]
fn per_delta_cost() {
    let mut enc = AgUi::new("t".into(), "r".into(), Uuid::nil());
    let mut out = String::new();
    let ns = crate::server::event_body::time_deltas(|ev| {
        out.clear();
        enc.event(ev, &mut out);
    });
    println!("AG-UI: {ns:.0} ns per delta");
}
