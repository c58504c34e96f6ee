use serde_json::{json, Value};
use uuid::Uuid;

use super::encode::AiSdk;
use super::*;
use crate::runs::LoggedEvent;
use crate::server::frontends::body::Encoder;

/// Feeds `(name, data)` events; the chunks written (`[DONE]` as the string) and whether the
/// stream ended.
fn encode(resumed: bool, events: &[(&str, Value)]) -> (Vec<Value>, bool) {
    let mut enc = AiSdk::new(Uuid::nil(), resumed);
    let mut out = String::new();
    let mut ended = false;
    for (i, (name, value)) in events.iter().enumerate() {
        assert!(!ended, "nothing after the end");
        let ev = LoggedEvent::stored(i as u64 + 1, name, value.to_string());
        ended = enc.event(&ev, &mut out);
    }
    let chunks = out
        .split("\n\n")
        .filter(|f| !f.is_empty())
        .map(|f| {
            let body = f.strip_prefix("data: ").unwrap();
            serde_json::from_str(body).unwrap_or_else(|_| json!(body))
        })
        .collect();
    (chunks, ended)
}

fn types(chunks: &[Value]) -> Vec<&str> {
    chunks
        .iter()
        .map(|c| c["type"].as_str().or(c.as_str()).unwrap())
        .collect()
}

fn done(status: &str, answer: &str, error: Option<&str>) -> Value {
    json!({"status": status, "iterations": 1, "tool_calls": 0,
           "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5, "llm_calls": 1},
           "elapsed_ms": 1, "mode": "native", "answer": answer, "error": error,
           "unprocessed_interrupts": []})
}

fn tool_end(call: &str, blocked: bool) -> Value {
    json!({"type": "tool_end", "iteration": 1, "call_id": call, "tool": "echo", "observation": "out",
           "error": false, "blocked": blocked, "duration_ms": 1, "artifacts": []})
}

#[test]
fn a_tool_run_is_dynamic_tool_parts_reasoning_and_text_then_finish_and_done() {
    let (chunks, ended) = encode(
        false,
        &[
            (
                "step",
                json!({"type": "thinking", "iteration": 1, "reasoning": "hmm"}),
            ),
            (
                "step",
                json!({"type": "tool_start", "iteration": 1, "call_id": "c1", "tool": "echo", "arguments": {"text": "hi"}}),
            ),
            ("step", tool_end("c1", false)),
            ("answer", json!({"status": "delta", "content": "Hi"})),
            (
                "answer",
                json!({"status": "done", "content": "Hi", "fallback": false}),
            ),
            ("done", done("completed", "Hi", None)),
        ],
    );
    assert!(ended);
    assert_eq!(
        types(&chunks),
        [
            "reasoning-start",
            "reasoning-delta",
            "reasoning-end",
            "tool-input-start",
            "tool-input-available",
            "tool-output-available",
            "text-start",
            "text-delta",
            "text-end",
            "finish-step",
            "finish",
            "[DONE]",
        ]
    );
    assert_eq!(chunks[4]["input"], json!({"text": "hi"}));
    assert_eq!(
        (
            chunks[4]["dynamic"].clone(),
            chunks[4]["providerExecuted"].clone()
        ),
        (json!(true), json!(true))
    );
    assert_eq!(chunks[5]["output"], "out");
    assert_eq!(chunks[10]["finishReason"], "stop");
}

#[test]
fn a_failed_run_sends_an_error_chunk_and_still_finishes() {
    let (chunks, _) = encode(false, &[("done", done("failed", "Sorry.", Some("boom")))]);
    assert_eq!(types(&chunks), ["error", "finish-step", "finish", "[DONE]"]);
    assert_eq!(chunks[0]["errorText"], "boom");
    assert_eq!(chunks[2]["finishReason"], "error");
}

#[test]
fn an_approval_request_ends_the_stream_and_a_rejected_call_is_denied_after_it() {
    let (chunks, ended) = encode(
        false,
        &[
            (
                "step",
                json!({"type": "tool_start", "iteration": 1, "call_id": "c2", "tool": "echo", "arguments": {}}),
            ),
            (
                "step",
                json!({"type": "approval_required", "iteration": 1, "approval_id": "a-2", "tool": "echo", "arguments": {}}),
            ),
        ],
    );
    assert!(ended);
    assert_eq!(
        types(&chunks)[2..],
        ["tool-approval-request", "finish-step", "finish", "[DONE]"]
    );
    assert_eq!(chunks[2]["approvalId"], "a-2");
    assert_eq!(chunks[2]["toolCallId"], "c2");
    let (resumed, _) = encode(true, &[("step", tool_end("c2", true))]);
    assert_eq!(
        resumed[0],
        json!({"type": "tool-output-denied", "toolCallId": "c2"})
    );
    let (blocked, _) = encode(false, &[("step", tool_end("c3", true))]);
    assert_eq!(blocked[0]["type"], "tool-output-error");
}

#[test]
fn the_last_assistant_message_carries_the_approval_answers() {
    let chat: ChatRequest = serde_json::from_value(json!({
        "id": "chat-1", "trigger": "submit-message",
        "messages": [
            {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "deploy"}]},
            {"id": "m1", "role": "assistant", "parts": [
                {"type": "dynamic-tool", "toolName": "deploy", "toolCallId": "c1", "state": "approval-responded",
                 "input": {}, "approval": {"id": "a-1", "approved": false, "reason": "not today"}}]},
        ]
    }))
    .unwrap();
    let request = front_request("helper".into(), &chat);
    assert_eq!(request.thread, "chat-1");
    assert_eq!(
        request.answers,
        [ApprovalAnswer {
            id: "a-1".into(),
            approve: false,
            reason: Some("not today".into())
        }]
    );
    assert_eq!(request.turns.len(), 2);
    assert_eq!(request.turns[0].text, "deploy");
}

#[test]
fn a_replay_passes_over_answered_approvals_and_stops_at_an_open_one() {
    let mut enc = AiSdk::replay(Uuid::nil(), ["a-2".to_string()].into());
    let start = |call: &str| json!({"type": "tool_start", "iteration": 1, "call_id": call, "tool": "echo", "arguments": {}});
    let asked = |id: &str| json!({"type": "approval_required", "iteration": 1, "approval_id": id, "tool": "echo", "arguments": {}});
    let events = [
        start("c1"),
        asked("a-1"),
        tool_end("c1", false),
        start("c2"),
        asked("a-2"),
    ];
    let mut out = String::new();
    let ended: Vec<bool> = events
        .iter()
        .enumerate()
        .map(|(i, v)| {
            enc.event(
                &LoggedEvent::stored(i as u64 + 1, "step", v.to_string()),
                &mut out,
            )
        })
        .collect();
    assert_eq!(ended, [false, false, false, false, true]);
    let chunks: Vec<Value> = out
        .split("\n\n")
        .filter_map(|f| serde_json::from_str(f.strip_prefix("data: ")?).ok())
        .collect();
    assert_eq!(
        types(&chunks),
        [
            "tool-input-start",
            "tool-input-available",
            "tool-output-available",
            "tool-input-start",
            "tool-input-available",
            "tool-approval-request",
            "finish-step",
            "finish",
        ]
    );
    assert_eq!(chunks[5]["approvalId"], "a-2");
}

#[test]
fn text_taken_back_before_a_tool_call_ends_its_part_and_the_answer_is_a_new_one() {
    let (chunks, ended) = encode(
        false,
        &[
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
            ("step", tool_end("c1", false)),
            ("answer", json!({"status": "start", "source": "reply"})),
            ("answer", json!({"status": "delta", "content": "It is 42."})),
            (
                "answer",
                json!({"status": "done", "content": "It is 42.", "fallback": false}),
            ),
            ("done", done("completed", "It is 42.", None)),
        ],
    );
    assert!(ended);
    let texts: Vec<&str> = chunks
        .iter()
        .filter(|c| c["type"] == "text-delta")
        .map(|c| c["delta"].as_str().unwrap())
        .collect();
    assert_eq!(
        texts,
        ["Let me check.", "It is 42."],
        "the answer is sent once"
    );
    let kinds = types(&chunks);
    let reset = kinds
        .iter()
        .position(|k| *k == "data-reagent-answer_reset")
        .unwrap();
    assert_eq!(kinds[reset - 1], "text-end", "{kinds:?}");
    assert_eq!(kinds.iter().filter(|k| **k == "text-start").count(), 2);
}

/// `cargo test --lib per_delta_cost -- --ignored --nocapture`: the encoder's cost per token.
#[test]
#[ignore]
fn per_delta_cost() {
    let mut enc = AiSdk::new(Uuid::nil(), false);
    let mut out = String::new();
    let ns = crate::server::event_body::time_deltas(|ev| {
        out.clear();
        enc.event(ev, &mut out);
    });
    println!("AI SDK: {ns:.0} ns per delta");
}
