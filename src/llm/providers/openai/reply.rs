//! A non-streamed chat completion, parsed leniently (every field optional, `null` accepted).

use serde::Deserialize;
use serde_json::{Map, Value};

use super::stream::{arguments_text, extra_fields};
use crate::llm::stream::excerpt;
use crate::llm::usage::WireUsage;
use crate::llm::{ChatResponse, Continuity, LlmError, ToolCall};

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
    tool_calls: Option<Vec<WireToolCall>>,
    /// What thinking models send beyond the message, kept whatever its shape (never a reason
    /// to fail the response) and replayed to the same model ([`Continuity`]).
    #[serde(flatten)]
    kept: KeptFields,
}

/// The message fields [`Continuity`] keeps, by their wire names.
#[derive(Debug, Default, Deserialize)]
struct KeptFields {
    /// DeepSeek.
    #[serde(default)]
    reasoning_content: Option<Value>,
    /// OpenRouter and others.
    #[serde(default)]
    reasoning: Option<Value>,
    /// OpenRouter: an array of typed reasoning items (text, summary, encrypted).
    #[serde(default)]
    reasoning_details: Option<Value>,
    /// Gemini: `{google: {thought_signature}}` on a reply without tool calls.
    #[serde(default)]
    extra_content: Option<Value>,
}

impl KeptFields {
    /// The reasoning text shown to the user (`reasoning_content`, else `reasoning`).
    fn reasoning_text(&self) -> Option<String> {
        [&self.reasoning_content, &self.reasoning]
            .into_iter()
            .find_map(|v| v.as_ref()?.as_str().filter(|s| !s.is_empty()))
            .map(str::to_string)
    }

    /// The fields that were sent, `null` ones left out, under their wire names.
    fn into_map(self) -> Map<String, Value> {
        let fields = [
            ("reasoning_content", self.reasoning_content),
            ("reasoning", self.reasoning),
            ("reasoning_details", self.reasoning_details),
            ("extra_content", self.extra_content),
        ];
        fields
            .into_iter()
            .filter_map(|(k, v)| Some((k.to_string(), v.filter(|v| !v.is_null())?)))
            .collect()
    }
}

#[derive(Debug, Deserialize)]
struct WireToolCall {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<WireFunction>,
    /// Gemini 3: `{google: {thought_signature}}`, to be echoed verbatim with this call.
    #[serde(default)]
    extra_content: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct WireFunction {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<Value>,
}

/// Reads a non-streamed 2xx body; its [`Continuity`] is `name`'s (the model's registry name).
pub(super) fn parse_completion(bytes: &[u8], name: &str) -> Result<ChatResponse, LlmError> {
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
    let mut call_fields = Vec::new();
    let tool_calls = message
        .tool_calls
        .unwrap_or_default()
        .into_iter()
        .enumerate()
        .map(|(n, c)| {
            call_fields.push(extra_fields(c.extra_content));
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
    let reasoning_content = message.kept.reasoning_text();
    Ok(ChatResponse {
        content: content_text(message.content),
        tool_calls,
        reasoning_content,
        continuity: Continuity::of(name, message.kept.into_map(), call_fields),
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
