use serde_json::json;

use super::*;

fn parse_json(v: serde_json::Value) -> Result<Parsed, OpenAiError> {
    parse(v.to_string().as_bytes())
}

#[test]
fn roles_split_into_query_history_and_system() {
    let p = parse_json(json!({
        "model": "helper",
        "messages": [
            {"role": "system", "content": "one"},
            {"role": "user", "content": "q1"},
            {"role": "assistant", "content": null},
            {"role": "developer", "content": [{"type": "text", "text": "two"}]},
            {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
        ],
        "stream": true,
        "stream_options": {"include_usage": true},
        "temperature": 0.3,
        "user": "someone",
        "tools": [],
        "n": 1,
    }))
    .unwrap();
    assert_eq!(p.model, "helper");
    assert_eq!(p.query, "a\nb");
    assert_eq!(p.system, ["one", "two"]);
    assert_eq!(
        p.history,
        [
            PriorTurn::text(MessageRole::User, "q1"),
            PriorTurn::text(MessageRole::Assistant, ""),
        ]
    );
    assert!(p.stream && p.include_usage);
}

#[test]
fn defaults_without_stream_fields() {
    let p = parse_json(
        json!({"model": "m", "messages": [{"role": "user", "content": "hi"}],
                              "stream": null, "stream_options": null}),
    )
    .unwrap();
    assert!(!p.stream && !p.include_usage);
    assert!(p.history.is_empty() && p.system.is_empty());
}

#[test]
fn refusals_name_the_parameter() {
    let hi = json!([{"role": "user", "content": "hi"}]);
    for (body, param) in [
        (
            json!({"model": "m", "messages": hi, "tools": [{"type": "function"}]}),
            Some("tools"),
        ),
        (
            json!({"model": "m", "messages": hi, "functions": [{"name": "f"}]}),
            Some("functions"),
        ),
        (json!({"model": "m", "messages": hi, "n": 3}), Some("n")),
        (json!({"model": "", "messages": hi}), Some("model")),
        (json!({"model": "m"}), Some("messages")),
        (
            json!({"model": "m", "messages": [{"role": "assistant", "content": "x"}]}),
            Some("messages"),
        ),
        (
            json!({"model": "m", "messages": [{"content": "x"}]}),
            Some("messages"),
        ),
        (
            json!({"model": "m", "messages": [{"role": "user", "content": [{"type": "image_url"}]}]}),
            Some("messages"),
        ),
        (json!({"model": 5, "messages": hi}), None),
    ] {
        let e = parse_json(body.clone()).unwrap_err();
        assert_eq!(e.status(), axum::http::StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(e.param(), param, "{body}");
    }
    assert!(parse(b"{not json").is_err());
    assert!(parse(b"[]").is_err());
}

#[test]
fn tools_are_caller_tools_and_trailing_tool_messages_are_their_outputs() {
    let p = parse_json(json!({
        "model": "m",
        "tools": [{"type": "function", "function": {"name": "confirm", "parameters": {"type": "object"}}}],
        "messages": [
            {"role": "user", "content": "ask me"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "confirm", "arguments": "{}"}},
                {"id": "b", "type": "function", "function": {"name": "confirm", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "a", "content": "yes"},
            {"role": "tool", "tool_call_id": "b", "content": [{"type": "text", "text": "no"}]},
        ],
    }))
    .unwrap();
    assert_eq!(p.tools.len(), 1);
    assert_eq!(p.tools[0].name, "confirm");
    assert_eq!(p.query, "");
    let outputs = p.outputs.unwrap();
    let pairs: Vec<(&str, &str)> = outputs
        .iter()
        .map(|o| (o.call_id.as_str(), o.output.as_str()))
        .collect();
    assert_eq!(pairs, [("a", "yes"), ("b", "no")]);

    let q =
        parse_json(json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]})).unwrap();
    assert!(q.outputs.is_none() && q.tools.is_empty());
    let e = parse_json(json!({"model": "m", "messages": [{"role": "tool", "content": "x"}]}))
        .unwrap_err();
    assert_eq!(e.param(), Some("messages"));
}

#[test]
fn image_url_parts_are_the_user_messages_images() {
    let p = parse_json(json!({
        "model": "m",
        "messages": [
            {"role": "user", "content": [
                {"type": "image_url", "image_url": {"url": "https://e.x/old.png", "detail": "low"}},
            ]},
            {"role": "assistant", "content": "a cat"},
            {"role": "user", "content": [
                {"type": "text", "text": "and this?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
                {"type": "image_url", "image_url": "https://e.x/b.png"},
            ]},
        ],
    }))
    .unwrap();
    assert_eq!(p.query, "and this?");
    assert_eq!(
        p.images,
        ["data:image/png;base64,AAAA", "https://e.x/b.png"]
    );
    assert_eq!(p.history[0].images, ["https://e.x/old.png"]);
    assert_eq!(p.history[0].content, "");
    let e = parse_json(json!({"model": "m", "messages": [
        {"role": "assistant", "content": [{"type": "image_url", "image_url": {"url": "https://e.x"}}]},
        {"role": "user", "content": "q"},
    ]}))
    .unwrap_err();
    assert_eq!(e.param(), Some("messages"));
}
