//! JSON-mode action parsing. The model replies with one JSON object; this turns
//! its free text into an [`Action`], tolerating the usual deviations: prose or fences around the
//! object (via `extract_json`), a missing or unknown `type` (a final answer), a missing
//! `tool_args` (`{}`), `tool_args` sent as a JSON string.
//!
//! Small models often write the action in another agent framework's dialect instead, so an
//! object without our `type` is also read through the common aliases: the name from `tool`,
//! `tool_name`, `name` or `action`, the arguments from `args`, `tool_args`, `arguments`,
//! `action_input` or `parameters`, and `{"action": "Final Answer", "action_input": …}` as a
//! final answer. An aliased name is a call only when it means a tool of the run; otherwise the
//! object stays a final answer, as any object without a `type` always was.
//!
//! The prompt's form for calls is a list, `{"type": "tool_call", "calls": [{"tool_name": …,
//! "tool_args": …}, …]}` (`tool_calls` is read for `calls`), so that one reply may make several;
//! each item is read with the same aliases, and the list's calls run up to the first item that
//! names no tool, as text calls are recovered up to the first unreadable object. The single
//! call with `tool_name` at the top level is still read (before any list beside it).

use serde_json::{Map, Value};

use super::prompts::unlabelled;
use crate::llm::{extract_json, ToolDefinition};

#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// One call or several, in the reply's order (never none).
    ToolCall {
        reasoning: String,
        calls: Vec<ActionCall>,
    },
    FinalAnswer {
        reasoning: String,
        answer: String,
    },
}

/// One call of a tool-call action.
#[derive(Clone, Debug, PartialEq)]
pub struct ActionCall {
    pub tool_name: String,
    pub tool_args: Value,
}

/// Where the tool's name may be, most specific first.
const NAME_KEYS: [&str; 4] = ["tool_name", "tool", "name", "action"];
/// Where the arguments may be, most specific first.
const ARGS_KEYS: [&str; 5] = [
    "tool_args",
    "args",
    "arguments",
    "action_input",
    "parameters",
];
/// Where an action's list of several calls may be.
const LIST_KEYS: [&str; 2] = ["calls", "tool_calls"];

fn text_field(obj: &Map<String, Value>, key: &str) -> Option<String> {
    match obj.get(key)? {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

/// The first of `keys` holding non-blank text.
fn first_text(obj: &Map<String, Value>, keys: &[&str]) -> Option<String> {
    keys.iter()
        .filter_map(|k| text_field(obj, k))
        .find(|s| !s.trim().is_empty())
}

fn first_value<'a>(obj: &'a Map<String, Value>, keys: &[&str]) -> Option<&'a Value> {
    keys.iter()
        .find_map(|k| obj.get(*k).filter(|v| !v.is_null()))
}

/// `None` when no JSON object can be found (the loop asks for a reformat). `tools` are the
/// run's tools: aliased names are checked against them, and a bare string of arguments is
/// given to a tool that takes exactly one parameter.
pub fn parse_action(content: &str, tools: &[ToolDefinition]) -> Option<Action> {
    match read_action(content, tools)? {
        Action::FinalAnswer { reasoning, answer } => Some(Action::FinalAnswer {
            reasoning,
            answer: unlabelled(&answer).to_string(),
        }),
        call => Some(call),
    }
}

fn read_action(content: &str, tools: &[ToolDefinition]) -> Option<Action> {
    if cut_off(content) {
        return None;
    }
    let value = extract_json(content)?;
    let obj = value.as_object()?;
    let reasoning = first_text(obj, &["reasoning", "thought"]).unwrap_or_default();
    let kind = obj.get("type").and_then(Value::as_str).unwrap_or("");
    if kind == "tool_call" {
        let own = named_call(obj, tools);
        let calls: Vec<ActionCall> = own
            .into_iter()
            .chain(listed(obj, tools, |_| true))
            .collect();
        return (!calls.is_empty()).then_some(Action::ToolCall { reasoning, calls });
    }
    if kind != "final_answer" {
        if let Some(action) = aliased(obj, tools, &reasoning) {
            return Some(action);
        }
    }
    let answer = text_field(obj, "answer")
        .or_else(|| text_field(obj, "content"))
        .unwrap_or_else(|| {
            if reasoning.is_empty() {
                content.trim().to_string()
            } else {
                reasoning.clone()
            }
        });
    Some(Action::FinalAnswer { reasoning, answer })
}

/// The reply opens a JSON object that the output cap cut before it ended. The object found
/// inside it (the arguments) is not the action, nor the reply an answer: the model is asked
/// again. Issue 52's model wrote `"reasoning": "Observation: 1234 * 5678 = 7000000…` to the cap.
pub fn cut_off(content: &str) -> bool {
    let text = crate::llm::content_calls::call_text(content);
    text.starts_with('{') && serde_json::from_str::<Value>(text).is_err_and(|e| e.is_eof())
}

/// What the model wrote of the `answer` of a `final_answer` action cut off before its object
/// ended (the output cap), so that neither the run's answer nor the synthesis's draft is that
/// JSON; `None` for anything else.
pub fn cut_answer(content: &str) -> Option<String> {
    let text = crate::llm::content_calls::call_text(content);
    if !cut_off(content) || !text.contains("\"final_answer\"") {
        return None;
    }
    let key = text.find("\"answer\"")? + "\"answer\"".len();
    let rest = text[key..].trim_start().strip_prefix(':')?.trim_start();
    let rest = rest.strip_prefix('"')?;
    let mut end = rest.len();
    let mut escaped = false;
    for (i, c) in rest.char_indices() {
        match (escaped, c) {
            (true, _) => escaped = false,
            (false, '\\') => escaped = true,
            (false, '"') => {
                end = i;
                break;
            }
            _ => {}
        }
    }
    // A cut inside an escape leaves a lone backslash; the string is then read as JSON.
    let body = rest[..end].trim_end_matches('\\');
    let answer: String = serde_json::from_str(&format!("\"{body}\"")).ok()?;
    let answer = unlabelled(&answer);
    (!answer.trim().is_empty()).then(|| answer.to_string())
}

/// The call an object names (with any of the aliases), the name as written: an explicit
/// `tool_call` keeps an unknown name, which the executor answers with the tool list.
fn named_call(obj: &Map<String, Value>, tools: &[ToolDefinition]) -> Option<ActionCall> {
    let tool_name = first_text(obj, &NAME_KEYS)?;
    let tool_args = arguments(first_value(obj, &ARGS_KEYS), definition(tools, &tool_name));
    Some(ActionCall {
        tool_name,
        tool_args,
    })
}

/// The calls of the object's list, up to the first that is no call or that `keep` refuses.
fn listed<'a>(
    obj: &'a Map<String, Value>,
    tools: &'a [ToolDefinition],
    keep: impl Fn(&ActionCall) -> bool + 'a,
) -> impl Iterator<Item = ActionCall> + 'a {
    let list = first_value(obj, &LIST_KEYS).and_then(Value::as_array);
    list.into_iter().flatten().map_while(move |item| {
        let item = item.as_object()?;
        // OpenAI's `{"type": "function", "function": {…}}`.
        let item = item
            .get("function")
            .and_then(Value::as_object)
            .unwrap_or(item);
        named_call(item, tools).filter(&keep)
    })
}

/// An action written with the aliases, or `None` when the object names neither a final answer
/// nor a tool of the run.
fn aliased(obj: &Map<String, Value>, tools: &[ToolDefinition], reasoning: &str) -> Option<Action> {
    let Some(name) = NAME_KEYS
        .iter()
        .find_map(|k| obj.get(*k).and_then(Value::as_str))
    else {
        return aliased_list(obj, tools, reasoning);
    };
    let name = name.trim();
    let args = first_value(obj, &ARGS_KEYS);
    if is_final_answer(name) {
        let answer = match args {
            Some(Value::String(s)) => s.clone(),
            Some(v) => v.to_string(),
            None => text_field(obj, "answer")?,
        };
        return Some(Action::FinalAnswer {
            reasoning: reasoning.to_string(),
            answer,
        });
    }
    let def = definition(tools, name)?;
    Some(Action::ToolCall {
        reasoning: reasoning.to_string(),
        calls: vec![ActionCall {
            tool_name: def.name.clone(),
            tool_args: arguments(args, Some(def)),
        }],
    })
}

/// A list of calls without our `type`: calls only as far as they name tools of the run.
fn aliased_list(
    obj: &Map<String, Value>,
    tools: &[ToolDefinition],
    reasoning: &str,
) -> Option<Action> {
    let known = |c: &ActionCall| definition(tools, &c.tool_name).is_some();
    let calls: Vec<ActionCall> = listed(obj, tools, known)
        .map(|mut c| {
            if let Some(def) = definition(tools, &c.tool_name) {
                c.tool_name = def.name.clone();
            }
            c
        })
        .collect();
    (!calls.is_empty()).then(|| Action::ToolCall {
        reasoning: reasoning.to_string(),
        calls,
    })
}

/// "Final Answer", "final_answer", "finish"…: the names frameworks use to stop.
fn is_final_answer(name: &str) -> bool {
    let norm: String = name
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect::<String>()
        .to_ascii_lowercase();
    matches!(norm.as_str(), "finalanswer" | "final" | "finish" | "answer")
}

/// The tool `name` means ([`crate::tools::names::resolve`]: its name, or one differing only in
/// case or `-`/`_`, or a bare MCP name).
fn definition<'a>(tools: &'a [ToolDefinition], name: &str) -> Option<&'a ToolDefinition> {
    let names: Vec<&str> = tools.iter().map(|d| d.name.as_str()).collect();
    let found = crate::tools::names::resolve(&names, name)?;
    tools.iter().find(|d| d.name == found)
}

/// The arguments object: missing is `{}`, a JSON string is parsed, and a plain value for a
/// tool with exactly one parameter becomes that parameter (`"action_input": "2+2"`).
fn arguments(raw: Option<&Value>, def: Option<&ToolDefinition>) -> Value {
    let raw = match raw {
        None => return Value::Object(Map::new()),
        Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
            Ok(v @ Value::Object(_)) => return v,
            _ => Value::String(s.clone()),
        },
        Some(v @ Value::Object(_)) => return v.clone(),
        Some(v) => v.clone(),
    };
    match def.and_then(single_parameter) {
        Some(p) => Value::Object(Map::from_iter([(p, raw)])),
        // The string case kept its old meaning ("{}"); other values go to the tool as sent.
        None if raw.is_string() => Value::Object(Map::new()),
        None => raw,
    }
}

fn single_parameter(def: &ToolDefinition) -> Option<String> {
    let props = def.parameters.get("properties")?.as_object()?;
    (props.len() == 1)
        .then(|| props.keys().next().cloned())
        .flatten()
}

mod problem;
mod schema;
pub use problem::action_problem;
pub use schema::{action_schema, response_format};

#[cfg(test)]
mod tests;
