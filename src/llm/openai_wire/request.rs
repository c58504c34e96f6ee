//! The chat completion request body, serialised in one pass from the [`ChatRequest`] straight
//! into the bytes sent: borrowed views over our types, no intermediate `serde_json::Value` (which
//! copied every message's text once more on every call). `pinned` and `reasoning_content` are
//! never sent.

use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde::Serialize;

use crate::llm::{ChatRequest, Message, ResponseFormat, Role, ToolChoice, ToolDefinition};

/// The body of one request: `serde_json::to_vec(&request_body(..))` writes it.
pub(in crate::llm) fn request_body<'a>(
    model: &'a str,
    request: &'a ChatRequest,
    stream: bool,
) -> RequestBody<'a> {
    RequestBody {
        model,
        request,
        stream,
    }
}

pub(in crate::llm) struct RequestBody<'a> {
    model: &'a str,
    request: &'a ChatRequest,
    stream: bool,
}

impl Serialize for RequestBody<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let r = self.request;
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("model", self.model)?;
        map.serialize_entry("messages", &Messages(&r.messages))?;
        if !r.tools.is_empty() {
            map.serialize_entry("tools", &Tools(&r.tools))?;
            // Providers reject `tool_choice` without `tools`, so it only travels with them.
            if let Some(choice) = &r.tool_choice {
                map.serialize_entry("tool_choice", &Choice(choice))?;
            }
        }
        if r.response_format == Some(ResponseFormat::JsonObject) {
            map.serialize_entry("response_format", &Typed("json_object"))?;
        }
        if let Some(t) = r.temperature {
            // Via the decimal text so that 0.7f32 goes out as 0.7, not 0.699999988079071.
            let t: f64 = t.to_string().parse().unwrap_or(f64::from(t));
            map.serialize_entry("temperature", &t)?;
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

/// `{"type": <0>}`.
struct Typed(&'static str);

impl Serialize for Typed {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(1))?;
        map.serialize_entry("type", self.0)?;
        map.end()
    }
}

struct IncludeUsage;

impl Serialize for IncludeUsage {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(1))?;
        map.serialize_entry("include_usage", &true)?;
        map.end()
    }
}

struct Messages<'a>(&'a [Message]);

impl Serialize for Messages<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for m in self.0 {
            seq.serialize_element(&Wire(m))?;
        }
        seq.end()
    }
}

/// One message as the provider receives it.
struct Wire<'a>(&'a Message);

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
            map.serialize_entry("tool_calls", &Calls(&m.tool_calls))?;
        } else {
            map.serialize_entry("content", &m.content)?;
        }
        map.end()
    }
}

struct Calls<'a>(&'a [crate::llm::ToolCall]);

impl Serialize for Calls<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for c in self.0 {
            seq.serialize_element(&Call {
                id: &c.id,
                kind: "function",
                function: CallFunction {
                    name: &c.name,
                    arguments: &c.arguments,
                },
            })?;
        }
        seq.end()
    }
}

#[derive(Serialize)]
struct Call<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: CallFunction<'a>,
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
