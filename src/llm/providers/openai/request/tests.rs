//! The one-pass request body against the `Value` tree it replaced (kept here as the reference).

use serde_json::{json, Value};

use super::request_body;
use crate::llm::{
    ChatRequest, Message, ResponseFormat, Role, ToolCall, ToolChoice, ToolDefinition,
};

/// The JSON body of a chat completion request. `pinned` and `reasoning_content` are never sent.
fn reference_body(model: &str, request: &ChatRequest, stream: bool) -> Value {
    let mut obj = serde_json::Map::new();
    obj.insert("model".into(), json!(model));
    let messages: Vec<Value> = request.messages.iter().map(wire_message).collect();
    obj.insert("messages".into(), Value::Array(messages));
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| {
                json!({"type": "function", "function": {
                    "name": t.name, "description": t.description, "parameters": t.parameters,
                }})
            })
            .collect();
        obj.insert("tools".into(), Value::Array(tools));
        // Providers reject `tool_choice` without `tools`, so it only travels with them.
        if let Some(choice) = &request.tool_choice {
            let choice = match choice {
                ToolChoice::Auto => json!("auto"),
                ToolChoice::None => json!("none"),
                ToolChoice::Required => json!("required"),
                ToolChoice::Function(name) => {
                    json!({"type": "function", "function": {"name": name}})
                }
            };
            obj.insert("tool_choice".into(), choice);
        }
    }
    match &request.response_format {
        Some(ResponseFormat::JsonObject) => {
            obj.insert("response_format".into(), json!({"type": "json_object"}));
        }
        Some(ResponseFormat::JsonSchema { name, schema }) => {
            let schema: Value = serde_json::from_str(schema.get()).unwrap();
            let format =
                json!({"type": "json_schema", "json_schema": {"name": name, "schema": schema}});
            obj.insert("response_format".into(), format);
        }
        _ => {}
    }
    if let Some(t) = request.temperature {
        // Via the decimal text so that 0.7f32 goes out as 0.7, not 0.699999988079071.
        let t: f64 = t.to_string().parse().unwrap_or(f64::from(t));
        obj.insert("temperature".into(), json!(t));
    }
    if let Some(max) = request.max_tokens {
        obj.insert("max_tokens".into(), json!(max));
    }
    if stream {
        obj.insert("stream".into(), json!(true));
        obj.insert("stream_options".into(), json!({"include_usage": true}));
    }
    Value::Object(obj)
}

fn wire_message(m: &Message) -> Value {
    match m.role {
        Role::System => json!({"role": "system", "content": m.content}),
        Role::User => json!({"role": "user", "content": m.content}),
        Role::Tool => json!({
            "role": "tool",
            "tool_call_id": m.tool_call_id.clone().unwrap_or_default(),
            "content": m.content,
        }),
        Role::Assistant if m.tool_calls.is_empty() => {
            json!({"role": "assistant", "content": m.content})
        }
        Role::Assistant => {
            let calls: Vec<Value> = m
                .tool_calls
                .iter()
                .map(|c| {
                    json!({"id": c.id, "type": "function",
                           "function": {"name": c.name, "arguments": c.arguments}})
                })
                .collect();
            let content = if m.content.is_empty() {
                Value::Null
            } else {
                json!(m.content)
            };
            json!({"role": "assistant", "content": content, "tool_calls": calls})
        }
    }
}

fn requests() -> Vec<ChatRequest> {
    let mut assistant = Message::assistant_tool_calls(
        "",
        vec![ToolCall {
            id: "call_1".into(),
            name: "calculator".into(),
            arguments: r#"{"expression":"1+1"}"#.into(),
        }],
    );
    assistant.reasoning_content = Some("secret thoughts".into());
    let mut talking = Message::assistant_tool_calls(
        "let me see \"quoted\" ✓",
        vec![ToolCall {
            id: "call_2".into(),
            name: "x".into(),
            arguments: "not json".into(),
        }],
    );
    talking.pinned = true;
    let messages = vec![
        Message::system("be brief").pinned(),
        Message::user("what is it?\nline two").pinned(),
        assistant,
        Message::tool("call_1", "2"),
        talking,
        Message::tool("call_2", ""),
        Message::assistant("done"),
    ];
    let tools: std::sync::Arc<[ToolDefinition]> = vec![ToolDefinition {
        name: "calculator".into(),
        description: "Arithmetic".into(),
        parameters: json!({"type": "object", "properties": {"expression": {"type": "string"}}}),
    }]
    .into();
    let mut out = vec![ChatRequest::new(messages.clone())];
    for choice in [
        ToolChoice::Auto,
        ToolChoice::None,
        ToolChoice::Required,
        ToolChoice::Function("calculator".into()),
    ] {
        out.push(ChatRequest {
            tools: tools.clone(),
            tool_choice: Some(choice),
            temperature: Some(0.7),
            max_tokens: Some(100),
            ..ChatRequest::new(messages.clone())
        });
    }
    // A tool choice without tools is not sent; JSON mode and plain text formats.
    out.push(ChatRequest {
        tool_choice: Some(ToolChoice::Required),
        response_format: Some(ResponseFormat::JsonObject),
        ..ChatRequest::new(messages.clone())
    });
    out.push(ChatRequest {
        response_format: Some(ResponseFormat::Text),
        ..ChatRequest::new(vec![])
    });
    let schema = crate::llm::SchemaText::new(&json!({"anyOf": [{"type": "object"}]})).unwrap();
    out.push(ChatRequest {
        response_format: Some(ResponseFormat::JsonSchema {
            name: "action",
            schema,
        }),
        ..ChatRequest::new(messages.clone())
    });
    out
}

#[test]
fn the_one_pass_body_is_the_reference_json() {
    for request in requests() {
        for stream in [false, true] {
            let bytes = serde_json::to_vec(&request_body("m-1", "m-1", &request, stream)).unwrap();
            let sent: Value = serde_json::from_slice(&bytes).unwrap();
            assert_eq!(sent, reference_body("m-1", &request, stream), "{request:?}");
        }
    }
}

#[test]
fn engine_metadata_never_travels() {
    let request = &requests()[1];
    let text =
        String::from_utf8(serde_json::to_vec(&request_body("m", "m", request, true)).unwrap())
            .unwrap();
    assert!(
        !text.contains("secret thoughts") && !text.contains("pinned"),
        "{text}"
    );
    assert!(text.contains(r#""content":null,"tool_calls""#), "{text}");
    assert!(
        text.contains(r#""stream_options":{"include_usage":true}"#),
        "{text}"
    );
}

/// An assistant turn with two calls whose continuity belongs to the model registered as `m`.
fn thinking_turn() -> ChatRequest {
    let calls = vec![
        ToolCall {
            id: "a".into(),
            name: "f".into(),
            arguments: "{}".into(),
        },
        ToolCall {
            id: "b".into(),
            name: "g".into(),
            arguments: "{}".into(),
        },
    ];
    let fields = |v: Value| match v {
        Value::Object(m) => m,
        _ => serde_json::Map::new(),
    };
    let continuity = crate::llm::Continuity {
        model: "m".into(),
        message: fields(json!({"reasoning_content": "why", "role": "not mine"})),
        tool_calls: vec![
            serde_json::Map::new(),
            fields(json!({"extra_content": {"google": {"thought_signature": "sig"}}})),
        ],
    };
    let turn = Message::assistant_tool_calls("", calls).with_continuity(Some(continuity));
    ChatRequest::new(vec![Message::user("q"), turn])
}

#[test]
fn continuity_goes_back_in_place_to_the_same_model_only() {
    let request = thinking_turn();
    let body = |name: &str| -> Value {
        let bytes = serde_json::to_vec(&request_body("provider-model", name, &request, false));
        serde_json::from_slice(&bytes.unwrap_or_default()).unwrap_or_default()
    };
    let same = body("m");
    assert_eq!(
        same["messages"][1],
        json!({"role": "assistant", "content": null, "reasoning_content": "why", "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}},
            {"id": "b", "type": "function", "function": {"name": "g", "arguments": "{}"},
             "extra_content": {"google": {"thought_signature": "sig"}}}]}),
        "kept fields in their places, never over the message's own"
    );
    let other = body("other");
    assert_eq!(other["messages"][1], {
        let mut plain = same["messages"][1].clone();
        plain.as_object_mut().map(|m| m.remove("reasoning_content"));
        plain["tool_calls"][1]
            .as_object_mut()
            .map(|m| m.remove("extra_content"));
        plain
    });
}

#[test]
fn a_user_message_with_images_is_sent_as_text_and_image_url_parts() {
    let png = "data:image/png;base64,iVBORw0KGgo=";
    let message = Message::user("what is this?").with_images(vec![
        crate::llm::ImagePart {
            url: png.into(),
            artifact: Some("a1".into()),
        },
        crate::llm::ImagePart {
            url: "https://example.com/cat.jpg".into(),
            artifact: None,
        },
    ]);
    let request = ChatRequest::new(vec![message]);
    let sent: Value = serde_json::from_slice(
        &serde_json::to_vec(&request_body("m", "m", &request, false)).unwrap(),
    )
    .unwrap();
    assert_eq!(
        sent["messages"][0],
        json!({"role": "user", "content": [
            {"type": "text", "text": "what is this?"},
            {"type": "image_url", "image_url": {"url": png}},
            {"type": "image_url", "image_url": {"url": "https://example.com/cat.jpg"}},
        ]})
    );
}
