//! The Chat Completions request as reagent reads it: lenient where OpenAI's clients differ
//! (unknown fields ignored, content as a string or text parts), strict where agents cannot
//! follow (`functions`, `n > 1`, tools that are not functions) — each refusal a 400 naming the
//! parameter. `tools` are caller tools (docs/protocols.md); a request whose last messages are
//! `tool` results answers a run that ended with `finish_reason: "tool_calls"`. [`Parsed`] is
//! the request reduced to what a run needs.

use serde::Deserialize;
use serde_json::Value;

use super::error::OpenAiError;
use crate::agent::caller_tools::ToolOutput;
use crate::domain::MessageRole;
use crate::llm::ToolDefinition;
use crate::runs::PriorTurn;

#[derive(Debug, Deserialize)]
struct Request {
    model: Option<String>,
    messages: Option<Vec<Value>>,
    stream: Option<bool>,
    stream_options: Option<StreamOptions>,
    tools: Option<Value>,
    functions: Option<Value>,
    n: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
struct StreamOptions {
    include_usage: Option<bool>,
}

/// What a run needs from a request.
#[derive(Debug, PartialEq)]
pub struct Parsed {
    pub model: String,
    /// The last user message.
    pub query: String,
    /// The image URLs of the last user message (`image_url` parts).
    pub images: Vec<String>,
    /// Earlier user and assistant messages, oldest first.
    pub history: Vec<PriorTurn>,
    /// `system` (and `developer`) messages, in order.
    pub system: Vec<String>,
    pub stream: bool,
    pub include_usage: bool,
    /// The caller's tools (`tools`).
    pub tools: Vec<ToolDefinition>,
    /// The `tool` messages after the last assistant message, when the request ends with them:
    /// the outputs of a paused run's calls (then `query` is empty).
    pub outputs: Option<Vec<ToolOutput>>,
}

/// Parses the body; every failure is a 400 in OpenAI's shape.
pub fn parse(body: &[u8]) -> Result<Parsed, OpenAiError> {
    let req: Request = OpenAiError::read_body(body)?;
    let model = req
        .model
        .filter(|m| !m.trim().is_empty())
        .ok_or_else(|| OpenAiError::invalid(Some("model"), "'model' is required"))?;
    refuse_unsupported(&req.functions, &req.n)?;
    let tools = tools(req.tools)?;
    let messages = req.messages.filter(|m| !m.is_empty()).ok_or_else(|| {
        OpenAiError::invalid(Some("messages"), "'messages' must be a non-empty array")
    })?;
    let mut turns = Vec::with_capacity(messages.len());
    for (i, m) in messages.iter().enumerate() {
        turns.push(message(i, m)?);
    }
    let outputs = trailing_outputs(&mut turns);
    let (query, images) = match (&outputs, turns.pop()) {
        (None, Some((Role::User, query))) => (query.text, query.images),
        (Some(_), _) => Default::default(),
        _ => {
            return Err(OpenAiError::invalid(
                Some("messages"),
                "The last message must be a 'user' message (it is the query) or the 'tool' \
                 results of the assistant's tool calls",
            ))
        }
    };
    let (history, system) = split_history(turns);
    let stream = req.stream.unwrap_or(false);
    let include_usage = req
        .stream_options
        .and_then(|o| o.include_usage)
        .unwrap_or(false);
    Ok(Parsed {
        model,
        query,
        images,
        history,
        system,
        stream,
        include_usage,
        tools,
        outputs,
    })
}

/// The turns before the query: the conversation's, and the system texts.
fn split_history(turns: Vec<(Role, Content)>) -> (Vec<PriorTurn>, Vec<String>) {
    let mut history = Vec::new();
    let mut system = Vec::new();
    for (role, content) in turns {
        match role {
            Role::System => system.push(content.text),
            Role::User => history.push(PriorTurn {
                images: content.images,
                ..PriorTurn::text(MessageRole::User, content.text)
            }),
            Role::Assistant => history.push(PriorTurn::text(MessageRole::Assistant, content.text)),
            // Results of earlier round trips: the stored run has them, a new one cannot.
            Role::Tool(_) => {}
        }
    }
    (history, system)
}

/// The `tool` messages that end the request (in order), taken off `turns`; `None` when the
/// last message is not one.
fn trailing_outputs(turns: &mut Vec<(Role, Content)>) -> Option<Vec<ToolOutput>> {
    let start = turns
        .iter()
        .rposition(|(r, _)| !matches!(r, Role::Tool(_)))
        .map_or(0, |i| i + 1);
    if start == turns.len() {
        return None;
    }
    let outputs = turns
        .drain(start..)
        .filter_map(|(role, output)| match role {
            Role::Tool(call_id) => Some(ToolOutput {
                call_id,
                output: output.text,
            }),
            _ => None,
        })
        .collect();
    Some(outputs)
}

/// `tools` as caller tools: `{type: "function", function: {name, description?, parameters?}}`.
fn tools(tools: Option<Value>) -> Result<Vec<ToolDefinition>, OpenAiError> {
    let items = match tools {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(_) => {
            return Err(OpenAiError::invalid(
                Some("tools"),
                "'tools' must be an array of function tools",
            ))
        }
    };
    items
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let function = t.get("function").filter(|_| {
                t.get("type").and_then(Value::as_str) == Some("function")
            });
            let name = function.and_then(|f| f.get("name")).and_then(Value::as_str);
            let (Some(f), Some(name)) = (function, name) else {
                return Err(OpenAiError::invalid(
                    Some("tools"),
                    format!("tools[{i}] must be {{\"type\": \"function\", \"function\": {{\"name\", …}}}}"),
                ));
            };
            let description = match f.get("description") {
                None => None,
                Some(Value::String(s)) => Some(s.as_str()),
                Some(_) => {
                    return Err(OpenAiError::invalid(
                        Some("tools"),
                        format!("tools[{i}].function.description must be a string"),
                    ))
                }
            };
            Ok(ToolDefinition {
                name: name.to_string(),
                description: description.unwrap_or_default().to_string(),
                parameters: f
                    .get("parameters")
                    .cloned()
                    .unwrap_or_else(|| serde_json::json!({"type": "object", "properties": {}})),
            })
        })
        .collect()
}

/// Legacy `functions` and several choices are not something an agent run can give.
fn refuse_unsupported(functions: &Option<Value>, n: &Option<Value>) -> Result<(), OpenAiError> {
    let given = |v: &Option<Value>| match v {
        None | Some(Value::Null) => false,
        Some(Value::Array(a)) => !a.is_empty(),
        Some(_) => true,
    };
    if given(functions) {
        return Err(OpenAiError::invalid(
            Some("functions"),
            "'functions' is not supported: declare caller tools in 'tools'",
        ));
    }
    match n {
        None | Some(Value::Null) => Ok(()),
        Some(v) if v.as_u64() == Some(1) => Ok(()),
        Some(_) => Err(OpenAiError::invalid(Some("n"), "Only n = 1 is supported")),
    }
}

#[derive(Clone, Debug, PartialEq)]
enum Role {
    System,
    User,
    Assistant,
    /// A `tool` message: the output for this call id.
    Tool(String),
}

fn message(i: usize, m: &Value) -> Result<(Role, Content), OpenAiError> {
    let role = match m.get("role").and_then(Value::as_str) {
        Some("system" | "developer") => Role::System,
        Some("user") => Role::User,
        Some("assistant") => Role::Assistant,
        Some("tool") => match m.get("tool_call_id").and_then(Value::as_str) {
            Some(id) => Role::Tool(id.to_string()),
            None => {
                return Err(OpenAiError::invalid(
                    Some("messages"),
                    format!("messages[{i}]: a 'tool' message needs its 'tool_call_id'"),
                ))
            }
        },
        Some(other) => {
            return Err(OpenAiError::invalid(
                Some("messages"),
                format!("messages[{i}]: the role '{other}' is not supported (system, developer, user, assistant or tool)"),
            ))
        }
        None => {
            return Err(OpenAiError::invalid(
                Some("messages"),
                format!("messages[{i}] needs a 'role'"),
            ))
        }
    };
    let content = content(i, m.get("content"))?;
    if !content.images.is_empty() && role != Role::User {
        return Err(OpenAiError::invalid(
            Some("messages"),
            format!("messages[{i}]: only 'user' messages may carry images"),
        ));
    }
    Ok((role, content))
}

/// A message's text and the URLs of its images.
#[derive(Debug, Default)]
struct Content {
    text: String,
    images: Vec<String>,
}

/// A string, or an array of `{type: "text", text}` parts (joined by newlines) and
/// `{type: "image_url", image_url: {url, detail?}}` parts (checked when the run starts); `null`
/// is empty.
fn content(i: usize, c: Option<&Value>) -> Result<Content, OpenAiError> {
    let parts = match c {
        None | Some(Value::Null) => return Ok(Content::default()),
        Some(Value::String(s)) => {
            return Ok(Content {
                text: s.clone(),
                images: Vec::new(),
            })
        }
        Some(Value::Array(parts)) => parts,
        Some(_) => {
            return Err(OpenAiError::invalid(
                Some("messages"),
                format!("messages[{i}].content must be a string or an array of content parts"),
            ))
        }
    };
    let mut texts = Vec::with_capacity(parts.len());
    let mut images = Vec::new();
    for (j, part) in parts.iter().enumerate() {
        match part.get("type").and_then(Value::as_str) {
            Some("text") => match part.get("text") {
                Some(Value::String(t)) => texts.push(t.as_str()),
                _ => return Err(part_error(i, j, "a 'text' part needs its 'text' string")),
            },
            Some("image_url") => {
                // `{url, detail?}` as OpenAI documents it; a bare string as some clients send.
                let url = match part.get("image_url") {
                    Some(Value::String(u)) => Some(u.as_str()),
                    Some(o) => o.get("url").and_then(Value::as_str),
                    None => None,
                };
                match url {
                    Some(u) => images.push(u.to_string()),
                    None => {
                        return Err(part_error(
                            i,
                            j,
                            "an 'image_url' part needs 'image_url.url'",
                        ))
                    }
                }
            }
            kind => {
                return Err(part_error(
                    i,
                    j,
                    &format!(
                        "only text and image_url parts are supported, not {}",
                        kind.unwrap_or("an untyped part")
                    ),
                ))
            }
        }
    }
    Ok(Content {
        text: texts.join("\n"),
        images,
    })
}

fn part_error(i: usize, j: usize, what: &str) -> OpenAiError {
    OpenAiError::invalid(
        Some("messages"),
        format!("messages[{i}].content[{j}]: {what}"),
    )
}

#[cfg(test)]
mod tests;
