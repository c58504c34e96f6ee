//! The OpenAI wire format of chat completions: request bodies serialised from our normalised
//! [`ChatRequest`](super::ChatRequest) in one pass (`request`), and lenient parsing of non-streamed replies (every field optional, `null`
//! accepted). Streamed chunks are decoded in [`super::stream`]. Provider JSON never leaves these
//! files.

use serde::Deserialize;
use serde_json::Value;

use super::stream::{arguments_text, excerpt, WireUsage};
use super::{ChatResponse, LlmError, ToolCall};

mod request;
pub(super) use request::request_body;

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

#[cfg(test)]
mod tests;
