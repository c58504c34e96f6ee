//! The content blocks of the Messages request, each kind written by a function of its own
//! ([`Block`]), and the `cache_control` breakpoint ([`Ephemeral`]) a block may carry.

use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::Value;

use std::borrow::Cow;

use crate::llm::{ImagePart, Message, ToolCall};

/// `{"type":"ephemeral"}`.
pub(super) struct Ephemeral;

impl Serialize for Ephemeral {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(1))?;
        map.serialize_entry("type", "ephemeral")?;
        map.end()
    }
}

/// One content block of a turn.
#[derive(Clone, Copy)]
pub(super) enum Block<'a> {
    Text(&'a str),
    ToolUse(&'a ToolCall),
    ToolResult(&'a Message),
    /// An image of a user message, after its text.
    Image(&'a ImagePart),
    /// A `thinking` or `redacted_thinking` block the model sent, as it sent it.
    Kept(&'a Value),
}

/// A block, with the breakpoint when `.1`.
pub(super) struct Marked<'a>(pub(super) Block<'a>, pub(super) bool);

impl Serialize for Marked<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if let Block::Kept(v) = self.0 {
            // Replayed unchanged; thinking blocks cannot carry a breakpoint anyway.
            return v.serialize(s);
        }
        let mut map = s.serialize_map(None)?;
        match self.0 {
            Block::Text(text) => text_block(&mut map, text)?,
            Block::ToolUse(call) => tool_use_block(&mut map, call)?,
            Block::ToolResult(m) => tool_result_block(&mut map, m)?,
            Block::Image(image) => image_block(&mut map, image)?,
            Block::Kept(_) => {}
        }
        if self.1 {
            map.serialize_entry("cache_control", &Ephemeral)?;
        }
        map.end()
    }
}

/// Placeholder for an empty text: the API refuses empty text blocks.
const EMPTY_TEXT: &str = "(empty)";

fn text_block<M: SerializeMap>(map: &mut M, text: &str) -> Result<(), M::Error> {
    map.serialize_entry("type", "text")?;
    map.serialize_entry("text", if text.is_empty() { EMPTY_TEXT } else { text })
}

/// A `data:` URL as a base64 source, an `http(s)` URL as a URL source (never fetched by us).
fn image_block<M: SerializeMap>(map: &mut M, image: &ImagePart) -> Result<(), M::Error> {
    map.serialize_entry("type", "image")?;
    let url = &image.url;
    let data = url
        .strip_prefix("data:")
        .and_then(|rest| rest.split_once(";base64,"));
    // Not `json!`: a `data:` URL is megabytes, written as a marker the request body sends the
    // run's copy for (`crate::llm::body`), never copied per request.
    match data {
        Some((media_type, data)) => {
            let data = url.wire(url.len() - data.len());
            map.serialize_entry("source", &ImageSource::Base64 { media_type, data })
        }
        None => map.serialize_entry("source", &ImageSource::Url { url: url.wire(0) }),
    }
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
enum ImageSource<'a> {
    Base64 {
        media_type: &'a str,
        data: Cow<'a, str>,
    },
    Url {
        url: Cow<'a, str>,
    },
}

fn tool_use_block<M: SerializeMap>(map: &mut M, call: &ToolCall) -> Result<(), M::Error> {
    map.serialize_entry("type", "tool_use")?;
    map.serialize_entry("id", &call.id)?;
    map.serialize_entry("name", &call.name)?;
    // `input` must be an object: the arguments as sent when they are one (borrowed, not
    // re-encoded), else an empty one (the call was answered with an error anyway).
    let args = call.arguments.trim_start();
    match serde_json::from_str::<&RawValue>(args) {
        Ok(raw) if args.starts_with('{') => map.serialize_entry("input", raw),
        _ => map.serialize_entry("input", &EmptyObject),
    }
}

struct EmptyObject;

impl Serialize for EmptyObject {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_map(Some(0))?.end()
    }
}

fn tool_result_block<M: SerializeMap>(map: &mut M, m: &Message) -> Result<(), M::Error> {
    map.serialize_entry("type", "tool_result")?;
    map.serialize_entry("tool_use_id", m.tool_call_id.as_deref().unwrap_or(""))?;
    map.serialize_entry("content", &m.content)?;
    if m.is_error {
        map.serialize_entry("is_error", &true)?;
    }
    Ok(())
}
