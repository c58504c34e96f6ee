use super::*;

/// Parses as the model registered as `m`.
fn parse_completion(bytes: &[u8]) -> Result<ChatResponse, LlmError> {
    super::parse_completion(bytes, "m")
}

#[test]
fn thinking_fields_of_any_shape_are_kept_and_never_fail_a_reply() {
    let body = br#"{"choices":[{"message":{"content":"","reasoning_content":"why","reasoning":{"odd":1},
        "reasoning_details":[{"type":"reasoning.encrypted","data":"xyz","index":0}],"refusal":null,
        "annotations":[],"tool_calls":[{"id":"a","function":{"name":"f","arguments":"{}"},
        "extra_content":{"google":{"thought_signature":"sig-a"}}},{"id":"b","function":{"name":"g"}}]},
        "finish_reason":"tool_calls"}]}"#;
    let r = parse_completion(body).unwrap_or_default();
    assert_eq!(r.reasoning_content.as_deref(), Some("why"));
    let c = r.continuity.unwrap_or_default();
    assert_eq!(c.model, "m");
    assert_eq!(
        serde_json::Value::Object(c.message),
        serde_json::json!({"reasoning_content": "why", "reasoning": {"odd": 1},
            "reasoning_details": [{"type": "reasoning.encrypted", "data": "xyz", "index": 0}]})
    );
    assert_eq!(c.tool_calls.len(), 1, "the second call had nothing to keep");
    assert_eq!(
        c.tool_calls[0].get("extra_content"),
        Some(&serde_json::json!({"google": {"thought_signature": "sig-a"}}))
    );
}

#[test]
fn a_plain_reply_has_no_continuity() {
    let r =
        parse_completion(br#"{"choices":[{"message":{"content":"hi","reasoning_content":null}}]}"#);
    assert_eq!(r.map(|r| r.continuity), Ok(None));
}

#[test]
fn completion_parsing_is_lenient() {
    let r = parse_completion(br#"{"choices":[{"message":{"content":null,"tool_calls":[{"function":{"name":"f","arguments":{"a":1}}}]},"finish_reason":"tool_calls"}],"usage":{}}"#);
    let r = r.unwrap_or_default();
    assert_eq!(r.content, "");
    assert_eq!(r.tool_calls.len(), 1);
    assert_eq!(r.tool_calls[0].id, "call_0");
    assert_eq!(r.tool_calls[0].arguments, r#"{"a":1}"#);
    assert_eq!(r.usage, crate::llm::Usage::call(0, 0));

    let parts = parse_completion(
            br#"{"choices":[{"message":{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}}],"usage":null}"#,
        );
    assert_eq!(parts.map(|r| r.content), Ok("ab".to_string()));
}

#[test]
fn unreadable_completions_are_invalid_responses() {
    assert!(matches!(
        parse_completion(b"<html>oops</html>"),
        Err(LlmError::InvalidResponse(_))
    ));
    assert!(matches!(
        parse_completion(br#"{"choices":[]}"#),
        Err(LlmError::InvalidResponse(_))
    ));
    assert!(matches!(
        parse_completion(br#"{"error":{"message":"boom"}}"#),
        Err(LlmError::InvalidResponse(m)) if m.contains("boom")
    ));
}
