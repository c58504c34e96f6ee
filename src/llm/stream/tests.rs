use super::*;
use crate::llm::Usage;

#[test]
fn duplicate_call_ids_are_made_unique() {
    let call = |id: &str| ToolCall {
        id: id.into(),
        name: "f".into(),
        arguments: "{}".into(),
    };
    let mut calls = vec![call("a"), call("a"), call("a_2"), call("b"), call("a")];
    dedupe_call_ids(&mut calls);
    let ids: Vec<&str> = calls.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["a", "a_3", "a_2", "b", "a_4"]);
}

fn d(
    index: Option<u32>,
    id: Option<&str>,
    name: Option<&str>,
    args: Option<&str>,
) -> ToolCallDelta {
    ToolCallDelta {
        index,
        id: id.map(str::to_string),
        name: name.map(str::to_string),
        arguments: args.map(str::to_string),
        extra_content: None,
    }
}

fn call(id: &str, name: &str, args: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: args.into(),
    }
}

#[test]
fn openai_style_single_call_with_arguments_in_later_chunks() {
    let mut a = ToolCallAssembler::new();
    a.push(d(Some(0), Some("call_a"), Some("calculator"), Some("")));
    a.push(d(Some(0), None, None, Some("{\"expr")));
    a.push(d(Some(0), None, None, Some("ession\":")));
    a.push(d(Some(0), None, None, Some("\"1+1\"}")));
    assert_eq!(
        a.finish(),
        vec![call("call_a", "calculator", "{\"expression\":\"1+1\"}")]
    );
}

#[test]
fn parallel_calls_interleaved_by_index() {
    let mut a = ToolCallAssembler::new();
    a.push(d(Some(0), Some("c0"), Some("alpha"), None));
    a.push(d(Some(1), Some("c1"), Some("beta"), None));
    a.push(d(Some(1), None, None, Some("{\"b\":")));
    a.push(d(Some(0), None, None, Some("{\"a\":1}")));
    a.push(d(Some(1), None, None, Some("2}")));
    assert_eq!(
        a.finish(),
        vec![
            call("c0", "alpha", "{\"a\":1}"),
            call("c1", "beta", "{\"b\":2}")
        ]
    );
}

#[test]
fn missing_index_new_id_opens_new_call_and_no_id_appends_to_last() {
    let mut a = ToolCallAssembler::new();
    a.push(d(None, Some("x"), Some("first"), Some("{")));
    a.push(d(None, None, None, Some("}")));
    a.push(d(None, Some("y"), Some("second"), None));
    a.push(d(None, Some("y"), None, Some("{\"k\":")));
    a.push(d(None, None, None, Some("true}")));
    assert_eq!(
        a.finish(),
        vec![
            call("x", "first", "{}"),
            call("y", "second", "{\"k\":true}")
        ]
    );
}

#[test]
fn name_split_over_chunks_is_concatenated() {
    let mut a = ToolCallAssembler::new();
    a.push(d(Some(0), Some("id"), Some("current_"), None));
    a.push(d(Some(0), None, Some("time"), None));
    a.push(d(Some(0), None, None, Some("{}")));
    assert_eq!(a.finish(), vec![call("id", "current_time", "{}")]);
}

#[test]
fn reused_index_with_a_different_id_is_a_new_call() {
    let mut a = ToolCallAssembler::new();
    a.push(d(Some(0), Some("a"), Some("one"), Some("{}")));
    a.push(d(Some(0), Some("b"), Some("two"), Some("{")));
    a.push(d(Some(0), None, None, Some("}")));
    assert_eq!(
        a.finish(),
        vec![call("a", "one", "{}"), call("b", "two", "{}")]
    );
}

#[test]
fn missing_ids_get_deterministic_ids_and_empty_fragments_are_dropped() {
    let mut a = ToolCallAssembler::new();
    assert!(a.is_empty());
    a.push(d(Some(3), None, Some("f"), Some("{}")));
    a.push(d(Some(4), None, None, None));
    a.push(d(Some(5), Some(""), Some("g"), None));
    assert!(!a.is_empty());
    assert_eq!(
        a.finish(),
        vec![call("call_0", "f", "{}"), call("call_1", "g", "")]
    );
}

#[test]
fn fragment_without_index_or_id_first_opens_a_call() {
    let mut a = ToolCallAssembler::new();
    a.push(d(None, None, Some("lonely"), Some("{}")));
    assert_eq!(a.finish(), vec![call("call_0", "lonely", "{}")]);
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

#[test]
fn excerpt_is_bounded_and_char_safe() {
    let long = "é".repeat(1000);
    let e = excerpt(&long);
    assert_eq!(e.chars().count(), 300);
    assert!(e.ends_with('…'));
    assert_eq!(excerpt("  short  "), "short");
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
