//! Tool calls a model wrote into its `content` instead of `tool_calls`.
//!
//! Small local models served by llama.cpp, Ollama or vLLM often print the call as text (the
//! server's template parser missed it, or the model left out its template's tags). A response
//! whose content is, or contains only, calls in one of these shapes is recovered:
//!
//! - a bare call object `{"name": …, "arguments": …}` (`parameters` is taken for `arguments`;
//!   the arguments an object or a JSON string holding one), or OpenAI's
//!   `{"type": "function", "function": {…}}`;
//! - a JSON list of call objects;
//! - `{"tool_calls": [...]}`;
//! - Hermes / Qwen `<tool_call>…</tool_call>` blocks (the last one may be unclosed);
//! - Mistral's `[TOOL_CALLS]` followed by a list or object, or by `name[ARGS]{…}` pairs;
//!
//! - several call objects one after another: one per line (JSON Lines) or run together
//!   (`{…}{…}`), and a reply the output cap cut off after one or more complete calls (the
//!   complete ones run, the unfinished tail is dropped);
//!
//! each optionally inside one Markdown fence that is the whole content, or that follows a short
//! preamble of a few words on one line (`Markdown:`, `Sure:`) — a longer sentence explains a
//! code sample. A call object may carry the keys of its tool's schema at its top level
//! (`required`, `title`, `type`, `properties`, `description`: small models copy them from the
//! tool list), unless it is a tool's definition (a `description` beside arguments that are a
//! schema). Calls are recovered up to the first object that is not a call to a tool of the run
//! (the calls before it run, the rest is dropped); when the first one is not, or when prose
//! stands around the calls, nothing is recovered and the content stays the final answer.
//! Names are checked with the caller's `is_tool`, which the loop answers with
//! [`crate::tools::names::resolve`] (so `calculatorArguments`, a schema's title, names
//! `calculator`).

use serde_json::{Map, Value};

use super::ToolCall;

/// The calls written in `content`, with empty ids (the loop numbers them), or `None` when the
/// content is not made only of calls to known tools.
pub fn parse_content_calls(content: &str, is_tool: impl Fn(&str) -> bool) -> Option<Vec<ToolCall>> {
    let text = call_text(content);
    let items = if text.starts_with("<tool_call>") {
        hermes_blocks(text)?
    } else if let Some(rest) = text.strip_prefix("[TOOL_CALLS]") {
        mistral(rest.trim())?
    } else {
        json_sequence(text)?
    };
    let calls: Vec<ToolCall> = items
        .into_iter()
        .map_while(|c| c.filter(|c| is_tool(&c.name)))
        .collect();
    (!calls.is_empty()).then_some(calls)
}

/// The objects of a reply in order: each a call, or `None` for one that is not (recovery stops
/// there).
type Items = Vec<Option<ToolCall>>;

/// Where calls in `content` would be: inside its one fence, after a short preamble, or the
/// whole (trimmed) text.
pub fn call_text(content: &str) -> &str {
    unfence(without_preamble(content.trim()))
}

/// The most words a preamble before a fenced call may have: enough for "Here is the call:",
/// too few for a sentence that explains what a code sample shows.
const PREAMBLE_WORDS: usize = 4;

/// From the fence on, when the text opens with a short one-line preamble before a fence.
fn without_preamble(text: &str) -> &str {
    let Some(at) = text.find("```") else {
        return text;
    };
    let preamble = text[..at].trim();
    let short = !preamble.contains('\n')
        && preamble.len() <= 40
        && preamble.split_whitespace().count() <= PREAMBLE_WORDS;
    if at > 0 && short {
        &text[at..]
    } else {
        text
    }
}

/// The body of a fence that spans the whole text (any language tag), else the text itself. A
/// fence never closed (the output cap cut the reply) counts as spanning the whole text.
fn unfence(text: &str) -> &str {
    let Some(open) = text.strip_prefix("```") else {
        return text;
    };
    let inner = match open.strip_suffix("```") {
        Some(inner) => inner,
        None if !open.contains("```") => open,
        None => return text,
    };
    let tag_end = inner
        .find(|c: char| !c.is_ascii_alphanumeric())
        .unwrap_or(inner.len());
    let body = inner[tag_end..].trim();
    // A fence that holds several fences is prose with code samples, not one call.
    if body.contains("```") {
        text
    } else {
        body
    }
}

/// One JSON value holding calls, or several one after another (whitespace or nothing between
/// them). A tail cut off inside a value (the output cap) is dropped, and so is everything from
/// an object that cannot be read (an unreadable item ends the list); any other text after the
/// calls, such as prose, spoils the whole reply.
fn json_sequence(text: &str) -> Option<Items> {
    let mut items = Items::new();
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    loop {
        let at = stream.byte_offset();
        match stream.next() {
            None => break,
            Some(Ok(v)) => items.extend(json_calls(v)),
            Some(Err(e)) if e.is_eof() && !items.is_empty() => break,
            Some(Err(_)) if !items.is_empty() && opens_object(&text[at..]) => {
                items.push(None);
                break;
            }
            Some(Err(_)) => return None,
        }
    }
    Some(items)
}

/// The text goes on with a JSON object or list that failed to parse, or with a stray bracket
/// (a model's extra `}`), not with prose.
pub fn opens_object(rest: &str) -> bool {
    rest.trim_start().starts_with(['{', '[', '}', ']', ','])
}

/// The items of one JSON value: a list of calls, `{"tool_calls": [...]}`, or one call object
/// (one unreadable item when it is none of them).
fn json_calls(value: Value) -> Items {
    match value {
        Value::Array(items) if !items.is_empty() => items.iter().map(call_object).collect(),
        Value::Object(obj) if obj.contains_key("tool_calls") => {
            let extra_ok = obj.iter().all(|(k, v)| match k.as_str() {
                "tool_calls" => true,
                "role" => v.as_str() == Some("assistant"),
                "content" => v.is_null() || v.as_str() == Some(""),
                _ => false,
            });
            match obj.get("tool_calls").and_then(Value::as_array) {
                Some(list) if extra_ok && !list.is_empty() => {
                    list.iter().map(call_object).collect()
                }
                _ => vec![None],
            }
        }
        v => vec![call_object(&v)],
    }
}

/// Keys of a tool's JSON schema that small models copy into the call object beside the name and
/// the arguments (`{"name": …, "arguments": …, "title": "calculatorArguments", "type":
/// "object"}`).
const SCHEMA_KEYS: [&str; 5] = ["required", "title", "type", "properties", "description"];

/// One call object. Only the call's own keys and copied schema keys are allowed, so an answer
/// that happens to be an object with a `name` (a person, a package) is never mistaken for a
/// call; nor is a tool's definition (a `description` and arguments that are a schema).
fn call_object(value: &Value) -> Option<ToolCall> {
    let obj = value.as_object()?;
    if let Some(function) = obj.get("function") {
        let only_wrapper = obj
            .keys()
            .all(|k| matches!(k.as_str(), "function" | "type" | "id" | "index"));
        return only_wrapper.then(|| call_object(function)).flatten();
    }
    if !obj.keys().all(|k| {
        matches!(k.as_str(), "name" | "arguments" | "parameters" | "id")
            || SCHEMA_KEYS.contains(&k.as_str())
    }) {
        return None;
    }
    let name = obj.get("name")?.as_str()?.trim();
    let args = obj.get("arguments").or_else(|| obj.get("parameters"))?;
    if obj.contains_key("description") && is_schema(args) {
        return None;
    }
    Some(ToolCall {
        id: String::new(),
        name: name.to_string(),
        arguments: Value::Object(arguments_object(args)?).to_string(),
    })
}

/// A JSON schema of an object, not arguments: only schema keywords, `properties` among them.
fn is_schema(args: &Value) -> bool {
    let Some(obj) = args.as_object() else {
        return false;
    };
    obj.get("properties").is_some_and(Value::is_object)
        && obj.keys().all(|k| {
            SCHEMA_KEYS.contains(&k.as_str())
                || matches!(k.as_str(), "$schema" | "additionalProperties" | "$defs")
        })
}

/// Arguments as an object, or as a JSON string that holds one.
fn arguments_object(args: &Value) -> Option<Map<String, Value>> {
    match args {
        Value::Object(m) => Some(m.clone()),
        Value::String(s) if s.trim().is_empty() => Some(Map::new()),
        Value::String(s) => match serde_json::from_str(s).ok()? {
            Value::Object(m) => Some(m),
            _ => None,
        },
        _ => None,
    }
}

/// `<tool_call>{…}</tool_call>` blocks with only whitespace between them; a block that cannot
/// be read ends the list.
fn hermes_blocks(text: &str) -> Option<Items> {
    const OPEN: &str = "<tool_call>";
    const CLOSE: &str = "</tool_call>";
    let mut items = Items::new();
    let mut rest = text;
    while !rest.is_empty() {
        let body = rest.strip_prefix(OPEN)?;
        let (inner, after) = match body.find(CLOSE) {
            Some(end) => (&body[..end], &body[end + CLOSE.len()..]),
            None => (body, ""),
        };
        match serde_json::from_str(unfence(inner.trim())) {
            Ok(v) => items.extend(json_calls(v)),
            Err(_) => {
                items.push(None);
                return Some(items);
            }
        }
        rest = after.trim_start();
    }
    Some(items)
}

/// After `[TOOL_CALLS]`: JSON (a list or one object), or `name[ARGS]{…}` pairs (a pair that
/// cannot be read ends the list).
fn mistral(rest: &str) -> Option<Items> {
    if rest.starts_with('[') || rest.starts_with('{') {
        return Some(json_calls(serde_json::from_str(rest).ok()?));
    }
    let mut items = Items::new();
    for part in rest.split("[TOOL_CALLS]") {
        let call = mistral_pair(part);
        let end = call.is_none();
        items.push(call);
        if end {
            break;
        }
    }
    Some(items)
}

/// One `name[ARGS]{…}`.
fn mistral_pair(part: &str) -> Option<ToolCall> {
    let (name, args) = part.split_once("[ARGS]")?;
    let name = name.trim();
    if name.is_empty() || name.contains(char::is_whitespace) {
        return None;
    }
    let args: Value = serde_json::from_str(args.trim()).ok()?;
    Some(ToolCall {
        id: String::new(),
        name: name.to_string(),
        arguments: Value::Object(arguments_object(&args)?).to_string(),
    })
}

#[cfg(test)]
mod tests;
