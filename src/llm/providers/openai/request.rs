//! The chat completion request body, serialised in one pass from the [`ChatRequest`] straight
//! into the bytes sent: borrowed views over our types, no intermediate `serde_json::Value` (which
//! copied every message's text once more on every call). `pinned` and `reasoning_content` are
//! never sent. An assistant message's [`Continuity`] is, to the model that produced it only
//! (same registry name): its message fields after `tool_calls`, each call's after `function`.

use std::borrow::Cow;

use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde::Serialize;

use serde_json::{Map, Value};

use crate::llm::{
    ChatRequest, Continuity, Message, ResponseFormat, Role, SchemaText, ToolChoice, ToolDefinition,
};

/// The body of one request to the provider's `model`, registered as `name`:
/// `RequestBody::encode(&request_body(..), ..)` writes it.
pub(in crate::llm) fn request_body<'a>(
    model: &'a str,
    name: &'a str,
    request: &'a ChatRequest,
    stream: bool,
) -> RequestBody<'a> {
    RequestBody {
        model,
        name,
        request,
        stream,
    }
}

pub(in crate::llm) struct RequestBody<'a> {
    model: &'a str,
    name: &'a str,
    request: &'a ChatRequest,
    stream: bool,
}

impl Serialize for RequestBody<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let r = self.request;
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("model", self.model)?;
        map.serialize_entry("messages", &Messages(&r.messages, self.name))?;
        if !r.tools.is_empty() {
            map.serialize_entry("tools", &Tools(&r.tools))?;
            // Providers reject `tool_choice` without `tools`, so it only travels with them.
            if let Some(choice) = &r.tool_choice {
                map.serialize_entry("tool_choice", &Choice(choice))?;
            }
        }
        match &r.response_format {
            Some(ResponseFormat::JsonObject) => {
                map.serialize_entry("response_format", &Typed("json_object"))?;
            }
            Some(ResponseFormat::JsonSchema { name, schema }) => {
                let json_schema = NamedSchema { name, schema };
                let format = SchemaFormat {
                    kind: "json_schema",
                    json_schema,
                };
                map.serialize_entry("response_format", &format)?;
            }
            Some(ResponseFormat::Text) | None => {}
        }
        // Each only when set: an unset one leaves the provider's default in force.
        if let Some(t) = r.temperature {
            map.serialize_entry("temperature", &decimal(t))?;
        }
        if let Some(p) = r.top_p {
            map.serialize_entry("top_p", &decimal(p))?;
        }
        if let Some(seed) = r.seed {
            map.serialize_entry("seed", &seed)?;
        }
        if let Some(max) = r.max_tokens {
            map.serialize_entry("max_tokens", &max)?;
        }
        if self.stream {
            map.serialize_entry("stream", &true)?;
            map.serialize_entry("stream_options", &IncludeUsage)?;
        }
        map.end()
    }
}

/// Via the decimal text, so that 0.7f32 goes out as 0.7, not 0.699999988079071.
fn decimal(v: f32) -> f64 {
    v.to_string().parse().unwrap_or(f64::from(v))
}

/// `{"type": <0>}`.
struct Typed(&'static str);

impl Serialize for Typed {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(1))?;
        map.serialize_entry("type", self.0)?;
        map.end()
    }
}

/// `{"type": "json_schema", "json_schema": {"name": …, "schema": …}}`, not `strict`: OpenAI's
/// strict mode refuses schemas a tool's parameters commonly are (optional keys).
#[derive(Serialize)]
struct SchemaFormat<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    json_schema: NamedSchema<'a>,
}

#[derive(Serialize)]
struct NamedSchema<'a> {
    name: &'a str,
    schema: &'a SchemaText,
}

struct IncludeUsage;

impl Serialize for IncludeUsage {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(1))?;
        map.serialize_entry("include_usage", &true)?;
        map.end()
    }
}

/// The messages, for the model registered as `.1`.
struct Messages<'a>(&'a [Message], &'a str);

impl Serialize for Messages<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for m in self.0 {
            let continuity = match &m.continuity {
                Some(c) if m.role == Role::Assistant && c.model == self.1 => Some(&**c),
                _ => None,
            };
            seq.serialize_element(&Wire(m, continuity))?;
        }
        seq.end()
    }
}

/// Keys a kept field may never take: they belong to the normalised message or call.
const OWN_KEYS: &[&str] = &[
    "role",
    "content",
    "tool_calls",
    "tool_call_id",
    "id",
    "type",
    "function",
];

/// Writes kept provider fields into the object being serialised (never over its own keys).
fn kept_fields<M: SerializeMap>(
    map: &mut M,
    fields: Option<&Map<String, Value>>,
) -> Result<(), M::Error> {
    for (key, value) in fields.into_iter().flatten() {
        if !OWN_KEYS.contains(&key.as_str()) {
            map.serialize_entry(key, value)?;
        }
    }
    Ok(())
}

/// One message as the provider receives it, with its continuity when it is for this model.
struct Wire<'a>(&'a Message, Option<&'a Continuity>);

impl Serialize for Wire<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let m = self.0;
        let mut map = s.serialize_map(None)?;
        match m.role {
            Role::System => map.serialize_entry("role", "system")?,
            Role::User => map.serialize_entry("role", "user")?,
            Role::Tool => {
                map.serialize_entry("role", "tool")?;
                map.serialize_entry("tool_call_id", m.tool_call_id.as_deref().unwrap_or(""))?;
            }
            Role::Assistant => map.serialize_entry("role", "assistant")?,
        }
        if m.role == Role::Assistant && !m.tool_calls.is_empty() {
            let content = (!m.content.is_empty()).then_some(m.content.as_str());
            map.serialize_entry("content", &content)?;
            map.serialize_entry("tool_calls", &Calls(&m.tool_calls, self.1))?;
        } else if !m.images.is_empty() {
            map.serialize_entry("content", &Parts(m))?;
        } else {
            map.serialize_entry("content", &m.content)?;
        }
        kept_fields(&mut map, self.1.map(|c| &c.message))?;
        map.end()
    }
}

/// A message with images as content parts: its text, then one `image_url` part per image.
struct Parts<'a>(&'a Message);

impl Serialize for Parts<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let m = self.0;
        let mut seq = s.serialize_seq(Some(m.images.len() + 1))?;
        if !m.content.is_empty() {
            seq.serialize_element(&serde_json::json!({"type": "text", "text": m.content}))?;
        }
        for image in &m.images {
            seq.serialize_element(&ImageUrlPart {
                kind: "image_url",
                image_url: ImageUrl {
                    url: image.url.wire(0),
                },
            })?;
        }
        seq.end()
    }
}

/// An `image_url` part: a `data:` URL is megabytes, written as a marker the request body sends
/// the run's copy for (`crate::llm::body`), never copied per request.
#[derive(Serialize)]
struct ImageUrlPart<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    image_url: ImageUrl<'a>,
}

#[derive(Serialize)]
struct ImageUrl<'a> {
    url: Cow<'a, str>,
}

/// The calls of a message, each with its kept fields from `.1`.
struct Calls<'a>(&'a [crate::llm::ToolCall], Option<&'a Continuity>);

impl Serialize for Calls<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for (n, c) in self.0.iter().enumerate() {
            seq.serialize_element(&Call {
                id: &c.id,
                function: CallFunction {
                    name: &c.name,
                    arguments: &c.arguments,
                },
                kept: self.1.and_then(|k| k.call(n)),
            })?;
        }
        seq.end()
    }
}

/// `{id, type: "function", function, ...kept}`.
struct Call<'a> {
    id: &'a str,
    function: CallFunction<'a>,
    kept: Option<&'a Map<String, Value>>,
}

impl Serialize for Call<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("id", self.id)?;
        map.serialize_entry("type", "function")?;
        map.serialize_entry("function", &self.function)?;
        kept_fields(&mut map, self.kept)?;
        map.end()
    }
}

#[derive(Serialize)]
struct CallFunction<'a> {
    name: &'a str,
    arguments: &'a str,
}

struct Tools<'a>(&'a [ToolDefinition]);

impl Serialize for Tools<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for t in self.0 {
            seq.serialize_element(&Tool {
                kind: "function",
                function: ToolFunction {
                    name: &t.name,
                    description: &t.description,
                    parameters: &t.parameters,
                },
            })?;
        }
        seq.end()
    }
}

#[derive(Serialize)]
struct Tool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: ToolFunction<'a>,
}

#[derive(Serialize)]
struct ToolFunction<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a serde_json::Value,
}

struct Choice<'a>(&'a ToolChoice);

impl Serialize for Choice<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            ToolChoice::Auto => s.serialize_str("auto"),
            ToolChoice::None => s.serialize_str("none"),
            ToolChoice::Required => s.serialize_str("required"),
            ToolChoice::Function(name) => {
                #[derive(Serialize)]
                struct Name<'a> {
                    name: &'a str,
                }
                #[derive(Serialize)]
                struct Forced<'a> {
                    #[serde(rename = "type")]
                    kind: &'static str,
                    function: Name<'a>,
                }
                Forced {
                    kind: "function",
                    function: Name { name },
                }
                .serialize(s)
            }
        }
    }
}

#[cfg(test)]
mod tests;
