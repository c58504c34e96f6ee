//! The SSE events of a streamed Messages reply ([`MessageDecoder`]): text and thinking deltas as
//! they arrive, each block folded into the turn as it closes, the rest at `message_stop`.

use serde::Deserialize;
use serde_json::Value;

use super::reply::{finish_reason, Reply};
use crate::llm::stream::{dedupe_call_ids, excerpt};
use crate::llm::usage::WireUsage;
use crate::llm::{LlmError, StreamEvent};

/// One SSE event of a streamed message.
#[derive(Debug, Deserialize)]
struct Event {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    index: Option<usize>,
    #[serde(default)]
    message: Option<Value>,
    #[serde(default)]
    content_block: Option<Value>,
    #[serde(default)]
    delta: Option<Value>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<Value>,
}

/// A block being streamed: its start, with the deltas folded in.
#[derive(Debug)]
struct Open {
    block: Value,
    /// `input_json_delta` pieces of a `tool_use` block.
    json: String,
}

/// Turns the `data` payloads of a Messages stream into [`StreamEvent`]s: text and thinking
/// deltas as they arrive; the tool calls, the continuity, the usage and `Done` at
/// `message_stop`.
#[derive(Debug, Default)]
pub struct MessageDecoder {
    name: String,
    open: Vec<(usize, Open)>,
    reply: Reply,
    usage: Option<WireUsage>,
    stop_reason: Option<String>,
    done: bool,
}

impl MessageDecoder {
    /// A decoder whose reply's [`Continuity`] belongs to the model registered as `name`.
    pub fn for_model(name: &str) -> Self {
        Self {
            name: name.to_string(),
            ..Self::default()
        }
    }

    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Feeds one `data` payload and returns the events it yields, in order. An `error` event
    /// or an unreadable payload is a [`LlmError::Stream`].
    pub fn feed(&mut self, data: &str) -> Result<Vec<StreamEvent>, LlmError> {
        let data = data.trim();
        if self.done || data.is_empty() {
            return Ok(Vec::new());
        }
        let event: Event = serde_json::from_str(data)
            .map_err(|e| LlmError::Stream(format!("malformed event ({e}): {}", excerpt(data))))?;
        let mut out = Vec::new();
        match event.kind.as_str() {
            "message_start" => {
                let usage = event.message.as_ref().and_then(|m| m.get("usage"));
                if let Some(u) = usage.and_then(|u| WireUsage::deserialize(u).ok()) {
                    self.add_usage(u);
                }
            }
            "content_block_start" => {
                let block = event.content_block.unwrap_or(Value::Null);
                let index = event.index.unwrap_or(self.open.len());
                self.open.push((
                    index,
                    Open {
                        block,
                        json: String::new(),
                    },
                ));
            }
            "content_block_delta" => {
                if let Some(delta) = event.delta {
                    self.delta(event.index, delta, &mut out);
                }
            }
            "content_block_stop" => self.close(event.index),
            "message_delta" => {
                let stop = event.delta.as_ref().and_then(|d| d.get("stop_reason"));
                if let Some(stop) = stop.and_then(Value::as_str) {
                    self.stop_reason = Some(stop.to_string());
                }
                if let Some(u) = event.usage {
                    self.add_usage(u);
                }
            }
            "message_stop" => return Ok(self.finish()),
            "error" => {
                let error = event.error.map_or_else(String::new, |e| {
                    let message = e.get("message").and_then(Value::as_str);
                    message.map_or_else(|| e.to_string(), str::to_string)
                });
                return Err(LlmError::Stream(format!(
                    "provider error in stream: {}",
                    excerpt(&error)
                )));
            }
            // `ping` and event types added later.
            _ => {}
        }
        Ok(out)
    }

    fn add_usage(&mut self, later: WireUsage) {
        match &mut self.usage {
            Some(u) => u.update(later),
            None => self.usage = Some(later),
        }
    }

    /// The open block of `index` (the last one opened when the provider sent no index).
    fn block(&mut self, index: Option<usize>) -> Option<&mut Open> {
        match index {
            Some(i) => self.open.iter_mut().find(|(n, _)| *n == i).map(|(_, o)| o),
            None => self.open.last_mut().map(|(_, o)| o),
        }
    }

    fn delta(&mut self, index: Option<usize>, delta: Value, out: &mut Vec<StreamEvent>) {
        let Some(open) = self.block(index) else {
            return;
        };
        let text = |key: &str| delta.get(key).and_then(Value::as_str).unwrap_or_default();
        match delta.get("type").and_then(Value::as_str) {
            Some("text_delta") => {
                append(&mut open.block, "text", text("text"));
                if !text("text").is_empty() {
                    out.push(StreamEvent::Content(text("text").to_string()));
                }
            }
            Some("input_json_delta") => open.json.push_str(text("partial_json")),
            Some("thinking_delta") => {
                append(&mut open.block, "thinking", text("thinking"));
                if !text("thinking").is_empty() {
                    out.push(StreamEvent::Reasoning(text("thinking").to_string()));
                }
            }
            Some("signature_delta") => append(&mut open.block, "signature", text("signature")),
            _ => {}
        }
    }

    /// A block is complete: it joins the reply.
    fn close(&mut self, index: Option<usize>) {
        let at = match index {
            Some(i) => self.open.iter().position(|(n, _)| *n == i),
            None => self.open.len().checked_sub(1),
        };
        let Some(at) = at else { return };
        let (_, mut open) = self.open.remove(at);
        if !open.json.is_empty() {
            if let Value::Object(block) = &mut open.block {
                block.insert("input".into(), Value::String(open.json));
            }
        }
        self.reply.add(open.block);
    }

    /// The byte stream ended without `message_stop`: complete only if a stop reason came.
    pub fn end_of_input(&mut self) -> Result<Vec<StreamEvent>, LlmError> {
        if self.done {
            return Ok(Vec::new());
        }
        if self.stop_reason.is_some() {
            return Ok(self.finish());
        }
        self.done = true;
        Err(LlmError::Stream(
            "stream ended before the reply was complete (no stop_reason, no message_stop)".into(),
        ))
    }

    fn finish(&mut self) -> Vec<StreamEvent> {
        self.done = true;
        while !self.open.is_empty() {
            self.close(None);
        }
        let mut events = Vec::new();
        let stop = self.stop_reason.take().unwrap_or_else(|| "end_turn".into());
        if stop == "refusal" {
            if let Some(text) = self.reply.refused() {
                events.push(StreamEvent::Content(text));
            }
        }
        let mut calls = std::mem::take(&mut self.reply.calls);
        dedupe_call_ids(&mut calls);
        if !calls.is_empty() {
            events.push(StreamEvent::ToolCalls(calls));
        }
        if let Some(c) = self.reply.continuity(&self.name) {
            events.push(StreamEvent::Continuity(c));
        }
        events.push(StreamEvent::Usage(WireUsage::to_usage(self.usage.as_ref())));
        events.push(StreamEvent::Done {
            finish_reason: Some(finish_reason(&stop)),
        });
        events
    }
}

/// Appends a streamed piece to a string field of a block (creating it).
fn append(block: &mut Value, key: &str, piece: &str) {
    if let Value::Object(map) = block {
        match map.get_mut(key) {
            Some(Value::String(s)) => s.push_str(piece),
            _ => {
                map.insert(key.into(), Value::String(piece.to_string()));
            }
        }
    }
}
