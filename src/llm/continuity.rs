//! [`Continuity`]: what a provider returns with a turn beyond the normalised message — reasoning
//! text and opaque signatures — kept with the assistant message and sent back unchanged, in its
//! original place, to the model that produced it, and to no other.
//!
//! Thinking models reject a history without it: DeepSeek answers 400 when an assistant turn with
//! tool calls comes back without its `reasoning_content`, Gemini 3 when a tool call comes back
//! without its `extra_content.google.thought_signature`. Another model would not understand it
//! (or would reject it), so a request to another model gets the plain message.
//!
//! The value is opaque above the provider clients: each protocol keeps the provider's own JSON
//! under the provider's own names, per message and per tool call, and only a client of the same
//! registry name ([`Continuity::model`]) reads it back. The OpenAI-compatible client keeps
//! `reasoning_content`, `reasoning`, `reasoning_details` and `extra_content` of the message, and
//! `extra_content` of each tool call. A native Anthropic client would keep its `thinking` and
//! `redacted_thinking` blocks in [`Continuity::message`] the same way (under a name of its own)
//! and write them back at the head of the message's content.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Provider data of one assistant turn, for the model named [`Self::model`] only.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Continuity {
    /// The registry name of the model that produced the turn.
    pub model: String,
    /// Fields of the message itself, as the provider sent them (wire name → value).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub message: Map<String, Value>,
    /// Fields of each tool call, in the order of the message's `tool_calls` (an empty object for
    /// a call that had none; empty when no call had any).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<Map<String, Value>>,
}

impl Continuity {
    /// Continuity of `model` from what was received, or `None` when the provider sent nothing
    /// to keep (so nothing is ever invented).
    pub fn of(
        model: &str,
        message: Map<String, Value>,
        mut tool_calls: Vec<Map<String, Value>>,
    ) -> Option<Self> {
        while tool_calls.last().is_some_and(Map::is_empty) {
            tool_calls.pop();
        }
        if message.is_empty() && tool_calls.is_empty() {
            return None;
        }
        Some(Self {
            model: model.to_string(),
            message,
            tool_calls,
        })
    }

    /// The fields of tool call number `index` (none when it had none).
    pub fn call(&self, index: usize) -> Option<&Map<String, Value>> {
        self.tool_calls.get(index).filter(|m| !m.is_empty())
    }
}

#[cfg(test)]
mod tests;
