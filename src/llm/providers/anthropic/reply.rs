//! A non-streamed Messages reply ([`parse_message`]) and the [`Reply`] a streamed one is put
//! together into as well (see the folder's docs for the mapping).

use serde::Deserialize;
use serde_json::{Map, Value};

use super::{REFUSAL_TEXT, THINKING_KEY};
use crate::llm::stream::{dedupe_call_ids, excerpt};
use crate::llm::usage::WireUsage;
use crate::llm::{ChatResponse, Continuity, LlmError, ToolCall};

#[derive(Debug, Deserialize)]
struct WireMessage {
    #[serde(default)]
    content: Option<Vec<Value>>,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<Value>,
}

/// The normalised `finish_reason` of a stop reason.
pub(super) fn finish_reason(stop: &str) -> String {
    match stop {
        "end_turn" | "stop_sequence" => "stop",
        "tool_use" => "tool_calls",
        "max_tokens" => "length",
        other => other,
    }
    .to_string()
}

/// The content blocks of one reply, put together (streamed or not).
#[derive(Debug, Default)]
pub(super) struct Reply {
    text: String,
    reasoning: String,
    pub(super) calls: Vec<ToolCall>,
    kept: Vec<Value>,
    /// Blocks seen so far: the position a kept block had.
    blocks: usize,
}

impl Reply {
    /// Adds one complete block.
    pub(super) fn add(&mut self, block: Value) {
        let at = self.blocks;
        self.blocks += 1;
        match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                if let Some(t) = block.get("text").and_then(Value::as_str) {
                    self.text.push_str(t);
                }
            }
            Some("tool_use") => {
                let field = |k: &str| block.get(k).and_then(Value::as_str).unwrap_or_default();
                let arguments = match block.get("input") {
                    Some(Value::String(s)) => s.clone(),
                    Some(v) if !v.is_null() => v.to_string(),
                    _ => "{}".to_string(),
                };
                let id = match field("id") {
                    "" => format!("call_{}", self.calls.len()),
                    id => id.to_string(),
                };
                self.calls.push(ToolCall {
                    id,
                    name: field("name").to_string(),
                    arguments,
                });
            }
            Some(kind @ ("thinking" | "redacted_thinking")) => {
                if kind == "thinking" {
                    if let Some(t) = block.get("thinking").and_then(Value::as_str) {
                        self.reasoning.push_str(t);
                    }
                }
                let mut item = Map::new();
                item.insert("at".into(), Value::from(at));
                item.insert("block".into(), block);
                self.kept.push(Value::Object(item));
            }
            // Unknown blocks (server tools, citations…) are not part of the normalised reply.
            _ => self.blocks -= 1,
        }
    }

    /// The reply's continuity, when the model sent thinking blocks.
    pub(super) fn continuity(&mut self, name: &str) -> Option<Continuity> {
        if self.kept.is_empty() {
            return None;
        }
        let mut message = Map::new();
        message.insert(
            THINKING_KEY.into(),
            Value::Array(std::mem::take(&mut self.kept)),
        );
        Continuity::of(name, message, Vec::new())
    }

    /// A refused turn: a sentence when the model wrote nothing, never tool calls.
    pub(super) fn refused(&mut self) -> Option<String> {
        self.calls.clear();
        self.text.is_empty().then(|| {
            self.text = REFUSAL_TEXT.to_string();
            self.text.clone()
        })
    }
}

/// Reads a non-streamed 2xx body; its [`Continuity`] is `name`'s (the model's registry name).
pub(super) fn parse_message(bytes: &[u8], name: &str) -> Result<ChatResponse, LlmError> {
    let message: WireMessage = serde_json::from_slice(bytes).map_err(|e| {
        LlmError::InvalidResponse(format!("{e}: {}", excerpt(&String::from_utf8_lossy(bytes))))
    })?;
    if let Some(error) = message.error.filter(|e| !e.is_null()) {
        return Err(LlmError::InvalidResponse(excerpt(&error.to_string())));
    }
    let Some(content) = message.content else {
        return Err(LlmError::InvalidResponse(
            "the message has no content".into(),
        ));
    };
    let mut reply = Reply::default();
    for block in content {
        reply.add(block);
    }
    let stop = message.stop_reason.unwrap_or_else(|| "end_turn".into());
    if stop == "refusal" {
        reply.refused();
    }
    dedupe_call_ids(&mut reply.calls);
    let reasoning = std::mem::take(&mut reply.reasoning);
    Ok(ChatResponse {
        continuity: reply.continuity(name),
        content: reply.text,
        tool_calls: reply.calls,
        reasoning_content: (!reasoning.is_empty()).then_some(reasoning),
        finish_reason: Some(finish_reason(&stop)),
        usage: WireUsage::to_usage(message.usage.as_ref()),
    })
}
