//! The `POST /v1/responses` body as reagent reads it (docs/protocols.md): lenient where clients
//! differ (unknown fields ignored, a string or item `input`, string or part `content`), a 400
//! naming the parameter where an agent cannot follow. [`Parsed`] is the request reduced to what
//! a run needs; [`Echo`] is what the response object repeats, stored with the run.

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use uuid::Uuid;

use super::tools::{caller_tools, tool_output};
use crate::agent::caller_tools::ToolOutput;
use crate::domain::MessageRole;
use crate::llm::ToolDefinition;
use crate::runs::PriorTurn;
use crate::server::openai::OpenAiError;
use content::{content, Content};

/// Most `metadata` keys, as OpenAI allows.
const MAX_METADATA_KEYS: usize = 16;

/// What the response object echoes of its request (stored as JSON beside the run).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Echo {
    pub model: String,
    pub instructions: Option<String>,
    /// The input items, normalised to `message` items (ids are given when listed).
    pub input: Vec<Value>,
    pub previous_response_id: Option<String>,
    pub tool_choice: Value,
    pub max_output_tokens: Option<u64>,
    pub metadata: Map<String, Value>,
    pub store: bool,
    pub background: bool,
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub user: Option<String>,
    /// The caller tools, as echoed.
    #[serde(default)]
    pub tools: Vec<Value>,
}

/// What a run needs from a request.
#[derive(Debug)]
pub struct Parsed {
    pub echo: Echo,
    /// The last `user` message.
    pub query: String,
    /// Its `input_image` URLs.
    pub images: Vec<String>,
    /// Earlier `user` and `assistant` messages, oldest first.
    pub history: Vec<PriorTurn>,
    /// `instructions`, then `system` and `developer` messages, in order.
    pub system: Vec<String>,
    pub stream: bool,
    /// The run of `previous_response_id`.
    pub previous: Option<Uuid>,
    /// The conversation of `conversation`.
    pub conversation: Option<Uuid>,
    /// Caller tools (`function` tools).
    pub client_tools: Vec<ToolDefinition>,
    /// `function_call_output` items: answers to the previous response's caller tool calls
    /// (then there is no query).
    pub tool_outputs: Vec<ToolOutput>,
}

#[derive(Debug, Deserialize)]
struct Body {
    model: Option<Value>,
    input: Option<Value>,
    instructions: Option<Value>,
    previous_response_id: Option<Value>,
    conversation: Option<Value>,
    tools: Option<Value>,
    tool_choice: Option<Value>,
    stream: Option<Value>,
    background: Option<Value>,
    store: Option<Value>,
    max_output_tokens: Option<Value>,
    metadata: Option<Value>,
    temperature: Option<Value>,
    top_p: Option<Value>,
    user: Option<Value>,
}

fn invalid(param: &'static str, message: impl Into<String>) -> OpenAiError {
    OpenAiError::invalid(Some(param), message)
}

/// A present, non-null field.
fn given(v: &Option<Value>) -> Option<&Value> {
    v.as_ref().filter(|v| !v.is_null())
}

fn flag(v: &Option<Value>, param: &'static str) -> Result<bool, OpenAiError> {
    match given(v) {
        None => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(invalid(param, format!("'{param}' must be a boolean"))),
    }
}

fn text(v: &Option<Value>, param: &'static str) -> Result<Option<String>, OpenAiError> {
    match given(v) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(invalid(param, format!("'{param}' must be a string"))),
    }
}

fn number(v: &Option<Value>, param: &'static str) -> Result<Option<f64>, OpenAiError> {
    match given(v) {
        None => Ok(None),
        Some(Value::Number(n)) => Ok(n.as_f64()),
        Some(_) => Err(invalid(param, format!("'{param}' must be a number"))),
    }
}

/// `resp_<run id>` → the run id.
pub fn response_run_id(id: &str) -> Option<Uuid> {
    id.strip_prefix("resp_")
        .and_then(|rest| Uuid::parse_str(rest).ok())
}

/// Parses the body; every failure is a 400 in OpenAI's shape.
pub fn parse(bytes: &[u8]) -> Result<Parsed, OpenAiError> {
    let body: Body = OpenAiError::read_body(bytes)?;
    let model = text(&body.model, "model")?
        .filter(|m| !m.trim().is_empty())
        .ok_or_else(|| invalid("model", "'model' is required (an agent, GET /v1/models)"))?;
    let tools = caller_tools(given(&body.tools), given(&body.tool_choice))?;
    let instructions = text(&body.instructions, "instructions")?;
    let (items, input, tool_outputs) = input_items(given(&body.input))?;
    let (system, mut turns) = split_turns(&instructions, items);
    let (query, images) = query_of(&mut turns, !tool_outputs.is_empty())?;
    let previous_response_id = text(&body.previous_response_id, "previous_response_id")?;
    let previous = previous_run(previous_response_id.as_deref())?;
    let conversation = conversation_id(given(&body.conversation))?;
    if !tool_outputs.is_empty() && previous.is_none() {
        return Err(invalid(
            "input",
            "function_call_output items answer the response named by 'previous_response_id'",
        ));
    }
    if previous.is_some() && conversation.is_some() {
        return Err(invalid(
            "previous_response_id",
            "'previous_response_id' and 'conversation' cannot be used together",
        ));
    }
    let echo = Echo {
        model,
        instructions,
        input,
        previous_response_id,
        tool_choice: tools.tool_choice,
        tools: tools.echoed,
        max_output_tokens: max_output_tokens(given(&body.max_output_tokens))?,
        metadata: metadata(given(&body.metadata))?,
        store: given(&body.store).is_none() || flag(&body.store, "store")?,
        background: flag(&body.background, "background")?,
        temperature: number(&body.temperature, "temperature")?,
        top_p: number(&body.top_p, "top_p")?,
        user: text(&body.user, "user")?,
    };
    Ok(Parsed {
        stream: flag(&body.stream, "stream")?,
        echo,
        query,
        images,
        history: turns,
        system,
        previous,
        conversation,
        client_tools: tools.definitions,
        tool_outputs,
    })
}

/// The system text (`instructions` first) and the conversation's turns, in order.
fn split_turns(
    instructions: &Option<String>,
    items: Vec<(Role, Content)>,
) -> (Vec<String>, Vec<PriorTurn>) {
    let mut system: Vec<String> = instructions.iter().cloned().collect();
    let mut turns = Vec::new();
    for (role, content) in items {
        match role {
            Role::System => system.push(content.text),
            Role::User => turns.push(PriorTurn {
                images: content.images,
                ..PriorTurn::text(MessageRole::User, content.text)
            }),
            Role::Assistant => turns.push(PriorTurn::text(MessageRole::Assistant, content.text)),
        }
    }
    (system, turns)
}

/// The query, taken off the turns: the last, a user message; none when the input is tool
/// outputs (which carry no messages).
fn query_of(
    turns: &mut Vec<PriorTurn>,
    outputs: bool,
) -> Result<(String, Vec<String>), OpenAiError> {
    match turns.pop() {
        None if outputs => Ok(Default::default()),
        Some(_) if outputs => Err(invalid(
            "input",
            "With function_call_output items the input holds no messages: the outputs \
             continue the previous response",
        )),
        Some(PriorTurn {
            role: MessageRole::User,
            content,
            images,
        }) => Ok((content, images)),
        _ => Err(invalid(
            "input",
            "The input must end with a 'user' message (it is the agent's query)",
        )),
    }
}

/// The run behind `previous_response_id`; an id that names none is a 404.
fn previous_run(id: Option<&str>) -> Result<Option<Uuid>, OpenAiError> {
    let Some(id) = id else {
        return Ok(None);
    };
    let run = response_run_id(id).ok_or_else(|| {
        OpenAiError::not_found(
            Some("previous_response_id"),
            format!("Previous response with id '{id}' not found."),
        )
    })?;
    Ok(Some(run))
}

fn max_output_tokens(v: Option<&Value>) -> Result<Option<u64>, OpenAiError> {
    let Some(v) = v else {
        return Ok(None);
    };
    let n = v.as_u64().filter(|n| *n >= 1).ok_or_else(|| {
        invalid(
            "max_output_tokens",
            "'max_output_tokens' must be a positive integer",
        )
    })?;
    Ok(Some(n))
}

/// `conversation`: a reagent conversation id, as a string or `{id}`.
fn conversation_id(v: Option<&Value>) -> Result<Option<Uuid>, OpenAiError> {
    let id = match v {
        None => return Ok(None),
        Some(Value::String(s)) => s.as_str(),
        Some(Value::Object(o)) => o.get("id").and_then(Value::as_str).unwrap_or_default(),
        Some(_) => {
            return Err(invalid(
                "conversation",
                "'conversation' must be a conversation id",
            ))
        }
    };
    Uuid::parse_str(id).map(Some).map_err(|_| {
        OpenAiError::not_found(
            Some("conversation"),
            format!("Conversation '{id}' not found."),
        )
    })
}

/// At most 16 string values, as OpenAI's `metadata`.
fn metadata(v: Option<&Value>) -> Result<Map<String, Value>, OpenAiError> {
    let map = match v {
        None => return Ok(Map::new()),
        Some(Value::Object(map)) => map,
        Some(_) => return Err(invalid("metadata", "'metadata' must be an object")),
    };
    if map.len() > MAX_METADATA_KEYS || map.values().any(|v| !v.is_string()) {
        return Err(invalid(
            "metadata",
            "'metadata' holds at most 16 keys, each with a string value",
        ));
    }
    Ok(map.clone())
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Role {
    System,
    User,
    Assistant,
}

/// The input as `(role, content)` turns, as normalised items, and its `function_call_output`s.
#[allow(clippy::type_complexity)]
fn input_items(
    v: Option<&Value>,
) -> Result<(Vec<(Role, Content)>, Vec<Value>, Vec<ToolOutput>), OpenAiError> {
    let items = match v {
        Some(Value::String(s)) => vec![json!({"type": "message", "role": "user", "content": s})],
        Some(Value::Array(items)) if !items.is_empty() => items.clone(),
        _ => {
            return Err(invalid(
                "input",
                "'input' must be a string or a non-empty array of items",
            ))
        }
    };
    let mut turns = Vec::with_capacity(items.len());
    let mut stored = Vec::with_capacity(items.len());
    let mut outputs = Vec::new();
    for (i, item) in items.iter().enumerate() {
        if item.get("type").and_then(Value::as_str) == Some("function_call_output") {
            let out = tool_output(i, item)?;
            stored.push(json!({
                "type": "function_call_output", "call_id": out.call_id, "output": out.output,
                "status": "completed",
            }));
            outputs.push(out);
            continue;
        }
        let (role, role_name, content) = message(i, item)?;
        if !content.images.is_empty() && role != Role::User {
            return Err(invalid(
                "input",
                format!("input[{i}]: only 'user' messages may carry images"),
            ));
        }
        let part = if role == Role::Assistant {
            json!({"type": "output_text", "text": content.text, "annotations": []})
        } else {
            json!({"type": "input_text", "text": content.text})
        };
        let mut parts = vec![part];
        parts.extend(content.echoed_images.iter().cloned());
        stored.push(json!({
            "type": "message", "role": role_name, "status": "completed", "content": parts,
        }));
        turns.push((role, content));
    }
    Ok((turns, stored, outputs))
}

/// One input item: a `message` (typed, or untyped with a `role`).
fn message(i: usize, item: &Value) -> Result<(Role, &'static str, Content), OpenAiError> {
    match item.get("type").and_then(Value::as_str) {
        None | Some("message") => {}
        Some("function_call") => {
            return Err(invalid(
                "input",
                format!(
                    "input[{i}]: function_call items are not read: answer the calls with \
                         function_call_output items and previous_response_id"
                ),
            ))
        }
        Some(other) => {
            return Err(invalid(
                "input",
                format!("input[{i}]: items of type '{other}' are not supported (only 'message')"),
            ))
        }
    }
    let (role, name) = match item.get("role").and_then(Value::as_str) {
        Some("user") => (Role::User, "user"),
        Some("assistant") => (Role::Assistant, "assistant"),
        Some("system") => (Role::System, "system"),
        Some("developer") => (Role::System, "developer"),
        _ => {
            return Err(invalid(
                "input",
                format!(
                    "input[{i}]: a message's role must be user, assistant, system or developer"
                ),
            ))
        }
    };
    Ok((role, name, content(i, item.get("content"))?))
}

mod content;

#[cfg(test)]
mod tests;
