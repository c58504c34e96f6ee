//! The Chat Completions request as reagent reads it: lenient where OpenAI's clients differ
//! (unknown fields ignored, content as a string or text parts), strict where agents cannot
//! follow (client `tools`/`functions`, `n > 1`, non-text content) — each refusal a 400 naming
//! the parameter. [`Parsed`] is the request reduced to what a run needs.

use serde::Deserialize;
use serde_json::Value;

use super::error::OpenAiError;
use crate::domain::MessageRole;
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
    /// Earlier user and assistant messages, oldest first.
    pub history: Vec<PriorTurn>,
    /// `system` (and `developer`) messages, in order.
    pub system: Vec<String>,
    pub stream: bool,
    pub include_usage: bool,
}

/// Parses the body; every failure is a 400 in OpenAI's shape.
pub fn parse(body: &[u8]) -> Result<Parsed, OpenAiError> {
    let value: Value = serde_json::from_slice(body).map_err(|e| {
        OpenAiError::invalid(None, format!("The request body is not valid JSON: {e}"))
    })?;
    if !value.is_object() {
        return Err(OpenAiError::invalid(
            None,
            "The request body must be a JSON object",
        ));
    }
    let req: Request = serde_json::from_value(value)
        .map_err(|e| OpenAiError::invalid(None, format!("Invalid request: {e}")))?;
    let model = req
        .model
        .filter(|m| !m.trim().is_empty())
        .ok_or_else(|| OpenAiError::invalid(Some("model"), "'model' is required"))?;
    refuse_client_tools(&req.tools, &req.functions, &req.n)?;
    let messages = req.messages.filter(|m| !m.is_empty()).ok_or_else(|| {
        OpenAiError::invalid(Some("messages"), "'messages' must be a non-empty array")
    })?;
    let mut turns = Vec::with_capacity(messages.len());
    for (i, m) in messages.iter().enumerate() {
        turns.push(message(i, m)?);
    }
    let Some((Role::User, query)) = turns.pop() else {
        return Err(OpenAiError::invalid(
            Some("messages"),
            "The last message must be a 'user' message (it is the query)",
        ));
    };
    let mut history = Vec::new();
    let mut system = Vec::new();
    for (role, content) in turns {
        match role {
            Role::System => system.push(content),
            Role::User => history.push(PriorTurn {
                role: MessageRole::User,
                content,
            }),
            Role::Assistant => history.push(PriorTurn {
                role: MessageRole::Assistant,
                content,
            }),
        }
    }
    let stream = req.stream.unwrap_or(false);
    let include_usage = req
        .stream_options
        .and_then(|o| o.include_usage)
        .unwrap_or(false);
    Ok(Parsed {
        model,
        query,
        history,
        system,
        stream,
        include_usage,
    })
}

/// Agents use their own tools: a client's tools would never be called, so say so.
fn refuse_client_tools(
    tools: &Option<Value>,
    functions: &Option<Value>,
    n: &Option<Value>,
) -> Result<(), OpenAiError> {
    let given = |v: &Option<Value>| match v {
        None | Some(Value::Null) => false,
        Some(Value::Array(a)) => !a.is_empty(),
        Some(_) => true,
    };
    if given(tools) {
        return Err(OpenAiError::invalid(
            Some("tools"),
            "'tools' is not supported: reagent agents call their own tools",
        ));
    }
    if given(functions) {
        return Err(OpenAiError::invalid(
            Some("functions"),
            "'functions' is not supported: reagent agents call their own tools",
        ));
    }
    match n {
        None | Some(Value::Null) => Ok(()),
        Some(v) if v.as_u64() == Some(1) => Ok(()),
        Some(_) => Err(OpenAiError::invalid(Some("n"), "Only n = 1 is supported")),
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Role {
    System,
    User,
    Assistant,
}

fn message(i: usize, m: &Value) -> Result<(Role, String), OpenAiError> {
    let role = match m.get("role").and_then(Value::as_str) {
        Some("system" | "developer") => Role::System,
        Some("user") => Role::User,
        Some("assistant") => Role::Assistant,
        Some(other) => {
            return Err(OpenAiError::invalid(
                Some("messages"),
                format!("messages[{i}]: the role '{other}' is not supported (system, developer, user or assistant)"),
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
    Ok((role, content))
}

/// A string, or an array of `{type: "text", text}` parts (joined by newlines); `null` is empty.
fn content(i: usize, c: Option<&Value>) -> Result<String, OpenAiError> {
    match c {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(Value::Array(parts)) => {
            let mut texts = Vec::with_capacity(parts.len());
            for (j, part) in parts.iter().enumerate() {
                match (part.get("type").and_then(Value::as_str), part.get("text")) {
                    (Some("text"), Some(Value::String(t))) => texts.push(t.as_str()),
                    (kind, _) => {
                        return Err(OpenAiError::invalid(
                            Some("messages"),
                            format!(
                                "messages[{i}].content[{j}]: only text parts are supported, not {}",
                                kind.unwrap_or("an untyped part")
                            ),
                        ))
                    }
                }
            }
            Ok(texts.join("\n"))
        }
        Some(_) => Err(OpenAiError::invalid(
            Some("messages"),
            format!("messages[{i}].content must be a string or an array of text parts"),
        )),
    }
}

#[cfg(test)]
mod tests;
