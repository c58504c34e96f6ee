//! The OpenAI wire format of chat completions: request bodies built from our normalised
//! [`ChatRequest`], and lenient parsing of non-streamed replies (every field optional, `null`
//! accepted). Streamed chunks are decoded in [`super::stream`]. Provider JSON never leaves these
//! files.

use serde::Deserialize;
use serde_json::{json, Value};

use super::stream::{arguments_text, excerpt, WireUsage};
use super::{
    ChatRequest, ChatResponse, LlmError, Message, ResponseFormat, Role, ToolCall, ToolChoice,
};

/// The JSON body of a chat completion request. `pinned` and `reasoning_content` are never sent.
pub(super) fn request_body(model: &str, request: &ChatRequest, stream: bool) -> Value {
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
    if request.response_format == Some(ResponseFormat::JsonObject) {
        obj.insert("response_format".into(), json!({"type": "json_object"}));
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

pub(super) fn wire_message(m: &Message) -> Value {
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

#[derive(Debug, Deserialize)]
struct Completion {
    #[serde(default)]
    choices: Option<Vec<Choice>>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct Choice {
    #[serde(default)]
    message: Option<WireMessage>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
struct WireMessage {
    /// A string, `null`, or (some servers) an array of `{type:"text", text}` parts.
    #[serde(default)]
    content: Option<Value>,
    #[serde(default)]
    reasoning_content: Option<String>,
    #[serde(default)]
    reasoning: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<WireToolCall>>,
}

#[derive(Debug, Deserialize)]
struct WireToolCall {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<WireFunction>,
}

#[derive(Debug, Deserialize)]
struct WireFunction {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<Value>,
}

/// Reads a non-streamed 2xx body.
pub(super) fn parse_completion(bytes: &[u8]) -> Result<ChatResponse, LlmError> {
    let completion: Completion = serde_json::from_slice(bytes).map_err(|e| {
        LlmError::InvalidResponse(format!("{e}: {}", excerpt(&String::from_utf8_lossy(bytes))))
    })?;
    let usage = WireUsage::to_usage(completion.usage.as_ref());
    let Some(choice) = completion.choices.and_then(|c| c.into_iter().next()) else {
        let why = completion.error.map_or_else(
            || "no choices in the response".to_string(),
            |e| excerpt(&e.to_string()),
        );
        return Err(LlmError::InvalidResponse(why));
    };
    let message = choice
        .message
        .ok_or_else(|| LlmError::InvalidResponse("the first choice has no message".to_string()))?;
    let tool_calls = message
        .tool_calls
        .unwrap_or_default()
        .into_iter()
        .enumerate()
        .map(|(n, c)| {
            let (name, arguments) = c
                .function
                .map(|f| (f.name, arguments_text(f.arguments)))
                .unwrap_or_default();
            ToolCall {
                id: c
                    .id
                    .filter(|id| !id.is_empty())
                    .unwrap_or(format!("call_{n}")),
                name: name.unwrap_or_default(),
                arguments: arguments.unwrap_or_default(),
            }
        })
        .collect();
    Ok(ChatResponse {
        content: content_text(message.content),
        tool_calls,
        reasoning_content: message
            .reasoning_content
            .or(message.reasoning)
            .filter(|r| !r.is_empty()),
        finish_reason: choice.finish_reason,
        usage,
    })
}

pub(super) fn content_text(content: Option<Value>) -> String {
    match content {
        Some(Value::String(s)) => s,
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect(),
        _ => String::new(),
    }
}
