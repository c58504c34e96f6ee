//! The stream of a chat completion: [`StreamDecoder`] reads the `data:` payloads of a
//! `chat.completion.chunk` SSE stream and turns them into [`StreamEvent`]s: content and reasoning
//! deltas as they arrive, then the assembled tool calls (see [`ToolCallAssembler`]), the usage and
//! `Done` once the stream is complete. Its wire types are private and lenient (every field
//! optional, `null` accepted) so harmless deviations never fail a run.

use serde::Deserialize;
use serde_json::{Map, Value};

use kept::KeptDeltas;

use crate::llm::stream::{excerpt, ToolCallAssembler, ToolCallDelta};
use crate::llm::usage::WireUsage;
use crate::llm::{Continuity, LlmError, StreamEvent};

/// Tool-call arguments are a JSON string per the spec, but a few servers send an object.
pub(super) fn arguments_text(value: Option<serde_json::Value>) -> Option<String> {
    match value? {
        serde_json::Value::String(s) => Some(s),
        serde_json::Value::Null => None,
        other => Some(other.to_string()),
    }
}

#[derive(Debug, Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Option<Vec<ChunkChoice>>,
    #[serde(default)]
    usage: Option<WireUsage>,
    /// Some providers report failures in-band, as a chunk carrying only `error`.
    #[serde(default)]
    error: Option<serde_json::Value>,
}

#[derive(Debug, Deserialize)]
struct ChunkChoice {
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Delta {
    #[serde(default)]
    content: Option<String>,
    /// DeepSeek's reasoning, in text pieces. Any other shape is ignored, never an error.
    #[serde(default)]
    reasoning_content: Option<Value>,
    /// OpenRouter and a few others name the reasoning delta `reasoning`.
    #[serde(default)]
    reasoning: Option<Value>,
    /// OpenRouter: an array of reasoning items per chunk, pieces of one item sharing its `index`.
    #[serde(default)]
    reasoning_details: Option<Value>,
    #[serde(default)]
    extra_content: Option<Value>,
    #[serde(default)]
    tool_calls: Option<Vec<WireToolCallDelta>>,
}

#[derive(Debug, Deserialize)]
struct WireToolCallDelta {
    #[serde(default)]
    index: Option<u32>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<WireFunctionDelta>,
    #[serde(default)]
    extra_content: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct WireFunctionDelta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<serde_json::Value>,
}

/// Turns SSE `data` payloads into [`StreamEvent`]s (see the module docs).
#[derive(Debug, Default)]
pub struct StreamDecoder {
    tools: ToolCallAssembler,
    kept: KeptDeltas,
    /// The registry name the reply's [`Continuity`] belongs to.
    name: String,
    usage: Option<WireUsage>,
    finish_reason: Option<String>,
    done: bool,
}

impl StreamDecoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// A decoder whose reply's [`Continuity`] belongs to the model registered as `name`.
    pub fn for_model(name: &str) -> Self {
        Self {
            name: name.to_string(),
            ..Self::default()
        }
    }

    /// True once the final events were produced (by `[DONE]` or [`Self::end_of_input`]).
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Feeds one `data` payload and returns the events it yields, in order. `[DONE]` yields the
    /// final tool calls, usage and `Done`. An unreadable chunk or an in-band error is a
    /// [`LlmError::Stream`].
    pub fn feed(&mut self, data: &str) -> Result<Vec<StreamEvent>, LlmError> {
        let data = data.trim();
        if self.done {
            return Ok(Vec::new());
        }
        if data == "[DONE]" {
            return Ok(self.finish());
        }
        if data.is_empty() {
            return Ok(Vec::new());
        }
        let chunk: Chunk = serde_json::from_str(data)
            .map_err(|e| LlmError::Stream(format!("malformed chunk ({e}): {}", excerpt(data))))?;
        if let Some(error) = chunk.error.filter(|e| !e.is_null()) {
            return Err(LlmError::Stream(format!(
                "provider error in stream: {}",
                excerpt(&error.to_string())
            )));
        }
        if chunk.usage.is_some() {
            self.usage = chunk.usage;
        }
        let mut events = Vec::new();
        for choice in chunk.choices.unwrap_or_default() {
            if let Some(mut delta) = choice.delta {
                if let Some(r) = self.kept.feed(&mut delta) {
                    events.push(StreamEvent::Reasoning(r));
                }
                if let Some(c) = delta.content.filter(|c| !c.is_empty()) {
                    events.push(StreamEvent::Content(c));
                }
                for call in delta.tool_calls.unwrap_or_default() {
                    let (name, arguments) = match call.function {
                        Some(f) => (f.name, arguments_text(f.arguments)),
                        None => (None, None),
                    };
                    self.tools.push(ToolCallDelta {
                        index: call.index,
                        id: call.id,
                        name,
                        arguments,
                        extra_content: call.extra_content,
                    });
                }
            }
            if let Some(reason) = choice.finish_reason.filter(|r| !r.is_empty()) {
                self.finish_reason = Some(reason);
            }
        }
        Ok(events)
    }

    /// The byte stream ended. Without `[DONE]` that is fine only if a `finish_reason` arrived
    /// (the reply is complete); otherwise the stream was cut and the reply is unusable.
    pub fn end_of_input(&mut self) -> Result<Vec<StreamEvent>, LlmError> {
        if self.done {
            return Ok(Vec::new());
        }
        if self.finish_reason.is_some() {
            return Ok(self.finish());
        }
        self.done = true;
        Err(LlmError::Stream(
            "stream ended before the reply was complete (no finish_reason, no [DONE])".into(),
        ))
    }

    fn finish(&mut self) -> Vec<StreamEvent> {
        self.done = true;
        let mut events = Vec::new();
        let (tools, extras) = std::mem::take(&mut self.tools).finish_with_extras();
        if !tools.is_empty() {
            events.push(StreamEvent::ToolCalls(tools));
        }
        let calls = extras.into_iter().map(extra_fields);
        let message = std::mem::take(&mut self.kept).into_map();
        if let Some(c) = Continuity::of(&self.name, message, calls.collect()) {
            events.push(StreamEvent::Continuity(c));
        }
        events.push(StreamEvent::Usage(WireUsage::to_usage(self.usage.as_ref())));
        events.push(StreamEvent::Done {
            finish_reason: self.finish_reason.take(),
        });
        events
    }
}

/// A tool call's kept fields: its `extra_content` when it was sent (and not `null`).
pub(super) fn extra_fields(extra_content: Option<Value>) -> Map<String, Value> {
    let mut fields = Map::new();
    if let Some(v) = extra_content.filter(|v| !v.is_null()) {
        fields.insert("extra_content".to_string(), v);
    }
    fields
}

mod kept;
#[cfg(test)]
mod tests;
