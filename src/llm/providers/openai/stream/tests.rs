use super::*;
use crate::llm::{ToolCall, Usage};

fn call(id: &str, name: &str, args: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: args.into(),
    }
}

fn feed_all(dec: &mut StreamDecoder, chunks: &[&str]) -> Vec<StreamEvent> {
    let mut out = Vec::new();
    for c in chunks {
        out.extend(dec.feed(c).unwrap_or_else(|e| panic!("chunk {c}: {e}")));
    }
    out
}

#[test]
fn decoder_yields_deltas_then_tools_usage_done_on_done_marker() {
    let mut dec = StreamDecoder::new();
    let events = feed_all(
        &mut dec,
        &[
            r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#,
            r#"{"choices":[{"delta":{"reasoning_content":"think"}}]}"#,
            r#"{"choices":[{"delta":{"content":"Hi"},"finish_reason":null}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":3,"total_tokens":10}}"#,
        ],
    );
    assert_eq!(
        events,
        vec![
            StreamEvent::Reasoning("think".into()),
            StreamEvent::Content("Hi".into())
        ]
    );
    assert!(!dec.is_done());
    let end = dec.feed("[DONE]").unwrap_or_default();
    assert_eq!(
        end,
        vec![
            StreamEvent::ToolCalls(vec![call("c", "f", "{}")]),
            // The reasoning, whole, to be sent back with the turn.
            StreamEvent::Continuity(crate::llm::Continuity {
                model: String::new(),
                message: serde_json::from_str(r#"{"reasoning_content":"think"}"#)
                    .unwrap_or_default(),
                tool_calls: vec![],
            }),
            StreamEvent::Usage(Usage::call(7, 3)),
            StreamEvent::Done {
                finish_reason: Some("tool_calls".into())
            },
        ]
    );
    assert!(dec.is_done());
    assert_eq!(
        dec.feed(r#"{"choices":[{"delta":{"content":"late"}}]}"#),
        Ok(vec![])
    );
}

#[test]
fn decoder_tolerates_null_and_empty_usage_and_choices() {
    let mut dec = StreamDecoder::new();
    let events = feed_all(
        &mut dec,
        &[
            r#"{"choices":null,"usage":null}"#,
            r#"{"choices":[{"delta":null}],"usage":{}}"#,
            r#"{"choices":[{"delta":{"content":"x"},"finish_reason":"stop"}]}"#,
        ],
    );
    assert_eq!(events, vec![StreamEvent::Content("x".into())]);
    let end = dec.end_of_input().unwrap_or_default();
    assert_eq!(
        end,
        vec![
            StreamEvent::Usage(Usage::call(0, 0)),
            StreamEvent::Done {
                finish_reason: Some("stop".into())
            },
        ]
    );
}

#[test]
fn decoder_reports_a_cut_stream_and_malformed_chunks() {
    let mut dec = StreamDecoder::new();
    let _ = feed_all(&mut dec, &[r#"{"choices":[{"delta":{"content":"par"}}]}"#]);
    assert!(matches!(dec.end_of_input(), Err(LlmError::Stream(_))));

    let mut dec = StreamDecoder::new();
    assert!(matches!(
        dec.feed("{\"choices\": [tru"),
        Err(LlmError::Stream(_))
    ));
    let err = dec.feed(r#"{"error":{"message":"overloaded"}}"#);
    assert!(matches!(err, Err(LlmError::Stream(m)) if m.contains("overloaded")));
}

#[test]
fn decoder_accepts_reasoning_alias_and_object_arguments() {
    let mut dec = StreamDecoder::new();
    let events = feed_all(
        &mut dec,
        &[
            r#"{"choices":[{"delta":{"reasoning":"r"}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"id":"k","function":{"name":"g","arguments":{"a":1}}}]},"finish_reason":"tool_calls"}]}"#,
            "[DONE]",
        ],
    );
    assert_eq!(events[0], StreamEvent::Reasoning("r".into()));
    assert_eq!(
        events[1],
        StreamEvent::ToolCalls(vec![call("k", "g", "{\"a\":1}")])
    );
}

/// The continuity a stream of these chunk payloads ends with.
fn streamed_continuity(chunks: &[serde_json::Value]) -> Option<crate::llm::Continuity> {
    let mut decoder = StreamDecoder::for_model("m");
    let mut events = Vec::new();
    for c in chunks {
        events.extend(decoder.feed(&c.to_string()).unwrap_or_default());
    }
    events.extend(decoder.feed("[DONE]").unwrap_or_default());
    events.into_iter().find_map(|e| match e {
        StreamEvent::Continuity(c) => Some(c),
        _ => None,
    })
}

fn delta(delta: serde_json::Value) -> serde_json::Value {
    serde_json::json!({"choices": [{"index": 0, "delta": delta}]})
}

#[test]
fn streamed_reasoning_details_are_put_back_together_by_index() {
    use serde_json::json;
    let chunks = [
        delta(json!({"reasoning": "Let ", "reasoning_details": [
            {"type": "reasoning.text", "text": "Let ", "index": 0, "format": "anthropic-claude-v1"}]})),
        delta(json!({"reasoning": "me", "reasoning_details": [
            {"type": "reasoning.text", "text": "me", "index": 0}]})),
        delta(json!({"reasoning_details": [
            {"type": "reasoning.text", "signature": "c2ln", "index": 0},
            {"type": "reasoning.encrypted", "data": "eHl6", "index": 1}]})),
        delta(json!({"content": "ok"})),
    ];
    let c = streamed_continuity(&chunks).unwrap_or_default();
    assert_eq!(c.model, "m");
    assert_eq!(
        serde_json::Value::Object(c.message),
        json!({"reasoning": "Let me", "reasoning_details": [
            {"type": "reasoning.text", "text": "Let me", "signature": "c2ln", "index": 0,
             "format": "anthropic-claude-v1"},
            {"type": "reasoning.encrypted", "data": "eHl6", "index": 1}]})
    );
}

#[test]
fn streamed_extra_content_stays_with_its_call_and_odd_shapes_fail_nothing() {
    use serde_json::json;
    let sig = json!({"google": {"thought_signature": "c2ln"}});
    let chunks = [
        delta(json!({"reasoning_content": {"not": "text"}, "tool_calls": [
            {"index": 0, "id": "a", "function": {"name": "f", "arguments": ""}},
            {"index": 1, "id": "b", "function": {"name": "g", "arguments": "{}"},
             "extra_content": sig}]})),
        delta(json!({"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]})),
    ];
    let c = streamed_continuity(&chunks).unwrap_or_default();
    assert!(c.message.is_empty(), "{:?}", c.message);
    assert_eq!(
        (c.call(0), c.call(1).and_then(|m| m.get("extra_content"))),
        (None, Some(&sig))
    );
}

#[test]
fn a_stream_without_thinking_fields_has_no_continuity() {
    let chunks = [delta(
        serde_json::json!({"content": "hi", "reasoning_content": null}),
    )];
    assert_eq!(streamed_continuity(&chunks), None);
}
