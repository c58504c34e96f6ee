use std::sync::Arc;

use serde_json::{json, Map, Value};

use super::reply::parse_message;
use super::request::{request_body, Settings};
use super::*;
use crate::llm::{ChatRequest, Continuity, Message, ToolCall, ToolChoice, ToolDefinition};

fn settings(stream: bool) -> Settings<'static> {
    Settings {
        model: "claude-x",
        name: "claude",
        max_tokens: 1000,
        thinking: None,
        cache: true,
        stream,
    }
}

fn body(settings: Settings<'_>, request: &ChatRequest) -> Value {
    let bytes = serde_json::to_vec(&request_body(settings, request)).expect("encodes");
    serde_json::from_slice(&bytes).expect("JSON")
}

fn tools() -> Arc<[ToolDefinition]> {
    ["lookup", "calculator"]
        .map(|name| ToolDefinition {
            name: name.into(),
            description: format!("the {name}"),
            parameters: json!({"type": "object"}),
        })
        .to_vec()
        .into()
}

fn thinking_block(n: u32) -> Value {
    json!({"type": "thinking", "thinking": format!("thought {n}"), "signature": format!("sig{n}==")})
}

/// An assistant turn of `model` that thought, then called `lookup` twice.
fn thought_calls(model: &str) -> Message {
    let calls = vec![
        ToolCall {
            id: "c1".into(),
            name: "lookup".into(),
            arguments: r#"{"q":"a"}"#.into(),
        },
        ToolCall {
            id: "c2".into(),
            name: "lookup".into(),
            arguments: "not json".into(),
        },
    ];
    let mut kept = Map::new();
    kept.insert(
        THINKING_KEY.into(),
        json!([{"at": 0, "block": thinking_block(1)},
               {"at": 2, "block": {"type": "redacted_thinking", "data": "opaque"}}]),
    );
    Message::assistant_tool_calls("", calls).with_continuity(Continuity::of(model, kept, vec![]))
}

#[test]
fn the_conversation_maps_to_system_turns_and_blocks() {
    let mut failed = Message::tool("c1", "boom");
    failed.is_error = true;
    let messages = vec![
        Message::system("be brief"),
        Message::user("find a"),
        thought_calls("claude"),
        // Results in completion order; they go out in call order, then the nudges.
        Message::tool("c2", "two"),
        failed,
        Message::user("Pause and reflect"),
        Message::assistant("done"),
    ];
    let mut request = ChatRequest::new(messages);
    request.tools = tools();
    request.tool_choice = Some(ToolChoice::Auto);
    request.temperature = Some(0.7);
    let b = body(settings(false), &request);
    assert_eq!(b["model"], "claude-x");
    assert_eq!(b["max_tokens"], 1000);
    assert_eq!(b["temperature"], 0.7);
    assert_eq!(
        b["system"],
        json!([{"type": "text", "text": "be brief",
        "cache_control": {"type": "ephemeral"}}])
    );
    assert_eq!(
        b["tools"][0],
        json!({"name": "lookup", "description": "the lookup",
        "input_schema": {"type": "object"}})
    );
    assert_eq!(b["tools"][1]["cache_control"], json!({"type": "ephemeral"}));
    assert_eq!(b["tool_choice"], json!({"type": "auto"}));
    assert!(b.get("stream").is_none() && b.get("thinking").is_none());
    let turns = b["messages"].as_array().expect("messages");
    let roles: Vec<&str> = turns
        .iter()
        .map(|t| t["role"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(roles, ["user", "assistant", "user", "assistant"]);
    assert_eq!(
        turns[0]["content"],
        json!([{"type": "text", "text": "find a"}])
    );
    assert_eq!(
        turns[1]["content"],
        json!([
            thinking_block(1),
            {"type": "tool_use", "id": "c1", "name": "lookup", "input": {"q": "a"}},
            {"type": "redacted_thinking", "data": "opaque"},
            {"type": "tool_use", "id": "c2", "name": "lookup", "input": {}},
        ])
    );
    assert_eq!(
        turns[2]["content"],
        json!([
            {"type": "tool_result", "tool_use_id": "c1", "content": "boom", "is_error": true},
            {"type": "tool_result", "tool_use_id": "c2", "content": "two"},
            {"type": "text", "text": "Pause and reflect"},
        ])
    );
    // The last message is the third breakpoint.
    assert_eq!(
        turns[3]["content"],
        json!([{"type": "text", "text": "done",
        "cache_control": {"type": "ephemeral"}}])
    );
    let text = b.to_string();
    assert_eq!(text.matches("cache_control").count(), 3);
}

#[test]
fn thinking_blocks_go_only_to_the_model_that_wrote_them() {
    let request = ChatRequest::new(vec![Message::user("q"), thought_calls("another")]);
    let b = body(settings(false), &request);
    let content = b["messages"][1]["content"].to_string();
    assert!(!content.contains("thinking"), "{content}");
}

#[test]
fn choices_thinking_and_streaming_are_written() {
    let mut request = ChatRequest::new(vec![Message::user("q")]);
    request.tools = tools();
    request.temperature = Some(0.5);
    let cases = [
        (ToolChoice::None, json!({"type": "none"})),
        (ToolChoice::Required, json!({"type": "any"})),
        (
            ToolChoice::Function("calculator".into()),
            json!({"type": "tool", "name": "calculator"}),
        ),
    ];
    for (choice, wire) in cases {
        request.tool_choice = Some(choice);
        assert_eq!(body(settings(false), &request)["tool_choice"], wire);
    }
    let thinking = Settings {
        thinking: Some(2048),
        cache: false,
        ..settings(true)
    };
    request.tool_choice = Some(ToolChoice::Auto);
    let b = body(thinking, &request);
    assert_eq!(
        b["thinking"],
        json!({"type": "enabled", "budget_tokens": 2048})
    );
    assert_eq!(
        b["max_tokens"],
        2048 + 1024,
        "room for the answer beyond the budget"
    );
    assert!(
        b.get("temperature").is_none(),
        "thinking takes no temperature"
    );
    assert_eq!(b["stream"], true);
    assert!(!b.to_string().contains("cache_control"), "cache = false");
    // A forced tool (structured output) goes without thinking, which cannot force tools.
    request.tool_choice = Some(ToolChoice::Function("calculator".into()));
    assert!(body(thinking, &request).get("thinking").is_none());
}

#[test]
fn a_reply_becomes_text_calls_reasoning_and_continuity() {
    let reply = json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x",
        "content": [
            thinking_block(7),
            {"type": "text", "text": "Let me look."},
            {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"q": "x"}},
            {"type": "server_tool_use", "id": "s", "name": "web", "input": {}},
        ],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 5, "output_tokens": 9, "cache_read_input_tokens": 100,
                  "cache_creation_input_tokens": 20},
    });
    let r = parse_message(reply.to_string().as_bytes(), "claude").expect("parses");
    assert_eq!(r.content, "Let me look.");
    assert_eq!(r.reasoning_content.as_deref(), Some("thought 7"));
    assert_eq!(r.tool_calls[0].arguments, r#"{"q":"x"}"#);
    assert_eq!(r.finish_reason.as_deref(), Some("tool_calls"));
    assert_eq!((r.usage.prompt_tokens, r.usage.completion_tokens), (125, 9));
    assert_eq!(
        (r.usage.cache_read_tokens, r.usage.cache_write_tokens),
        (100, 20)
    );
    let c = r.continuity.expect("thinking kept");
    assert_eq!(c.model, "claude");
    assert_eq!(
        c.message[THINKING_KEY],
        json!([{"at": 0, "block": thinking_block(7)}])
    );

    let refused = json!({"content": [], "stop_reason": "refusal"});
    let r = parse_message(refused.to_string().as_bytes(), "claude").expect("parses");
    assert_eq!(
        (r.content.as_str(), r.finish_reason.as_deref()),
        (REFUSAL_TEXT, Some("refusal"))
    );
    let cut = json!({"content": [{"type": "text", "text": "Half"}], "stop_reason": "max_tokens"});
    let r = parse_message(cut.to_string().as_bytes(), "claude").expect("parses");
    assert_eq!(r.finish_reason.as_deref(), Some("length"));
    assert!(parse_message(b"{\"type\":\"error\",\"error\":{}}", "c").is_err());
}

/// The `data` payloads of a streamed reply that thinks, writes and calls a tool.
fn streamed() -> Vec<Value> {
    vec![
        json!({"type": "message_start", "message": {"id": "m", "content": [], "usage":
            {"input_tokens": 3, "output_tokens": 1, "cache_read_input_tokens": 50}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "thought "}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "7"}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "sig7=="}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "ping"}),
        json!({"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Let me"}}),
        json!({"type": "content_block_stop", "index": 1}),
        json!({"type": "content_block_start", "index": 2, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {}}}),
        json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": "{\"q\": "}}),
        json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": "\"x\"}"}}),
        json!({"type": "content_block_stop", "index": 2}),
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 12}}),
        json!({"type": "message_stop"}),
    ]
}

#[test]
fn a_stream_is_decoded_with_its_thinking_kept_whole() {
    let mut d = MessageDecoder::for_model("claude");
    let mut events = Vec::new();
    for data in streamed() {
        events.extend(d.feed(&data.to_string()).expect("decodes"));
    }
    assert!(d.is_done());
    let call = ToolCall {
        id: "toolu_1".into(),
        name: "lookup".into(),
        arguments: r#"{"q": "x"}"#.into(),
    };
    let mut kept = Map::new();
    kept.insert(
        THINKING_KEY.into(),
        json!([{"at": 0, "block": thinking_block(7)}]),
    );
    let usage = crate::llm::Usage::call(53, 12).with_cache(50, 0);
    assert_eq!(
        events,
        vec![
            StreamEvent::Reasoning("thought ".into()),
            StreamEvent::Reasoning("7".into()),
            StreamEvent::Content("Let me".into()),
            StreamEvent::ToolCalls(vec![call]),
            StreamEvent::Continuity(Continuity::of("claude", kept, vec![]).expect("kept")),
            StreamEvent::Usage(usage),
            StreamEvent::Done {
                finish_reason: Some("tool_calls".into())
            },
        ]
    );
}

#[test]
fn stream_errors_cuts_and_refusals() {
    let mut d = MessageDecoder::for_model("claude");
    let error =
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}});
    assert!(
        matches!(d.feed(&error.to_string()), Err(LlmError::Stream(m)) if m.contains("Overloaded"))
    );
    let mut d = MessageDecoder::for_model("claude");
    for data in &streamed()[..9] {
        d.feed(&data.to_string()).expect("decodes");
    }
    assert!(d.end_of_input().is_err(), "no stop reason: cut");
    let mut d = MessageDecoder::for_model("claude");
    let stop = json!({"type": "message_delta", "delta": {"stop_reason": "refusal"}});
    d.feed(&stop.to_string()).expect("decodes");
    let events = d.end_of_input().expect("a stop reason came");
    assert_eq!(events[0], StreamEvent::Content(REFUSAL_TEXT.into()));
    assert!(d.feed("not json").is_ok(), "nothing after the end");
}

#[test]
fn images_follow_their_text_as_base64_or_url_sources() {
    let message = Message::user("what is this?").with_images(vec![
        crate::llm::ImagePart {
            url: "data:image/png;base64,iVBORw0KGgo=".into(),
            artifact: Some("a1".into()),
        },
        crate::llm::ImagePart {
            url: "https://example.com/cat.jpg".into(),
            artifact: None,
        },
    ]);
    let b = body(settings(false), &ChatRequest::new(vec![message]));
    let content = &b["messages"][0]["content"];
    assert_eq!(content[0], json!({"type": "text", "text": "what is this?"}));
    assert_eq!(
        content[1],
        json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}})
    );
    assert_eq!(content[2]["type"], "image");
    assert_eq!(
        content[2]["source"],
        json!({"type": "url", "url": "https://example.com/cat.jpg"})
    );
    assert_eq!(content.as_array().map(Vec::len), Some(3));
}
