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
//! code sample. Every name must be a tool of the run; otherwise, or with any other text around
//! the calls, nothing is recovered and the content stays the final answer.

use serde_json::{Map, Value};

use super::ToolCall;

/// The calls written in `content`, with empty ids (the loop numbers them), or `None` when the
/// content is not made only of calls to known tools.
pub fn parse_content_calls(content: &str, is_tool: impl Fn(&str) -> bool) -> Option<Vec<ToolCall>> {
    let text = call_text(content);
    let calls = if text.starts_with("<tool_call>") {
        hermes_blocks(text)?
    } else if let Some(rest) = text.strip_prefix("[TOOL_CALLS]") {
        mistral(rest.trim())?
    } else {
        json_sequence(text)?
    };
    (!calls.is_empty() && calls.iter().all(|c| is_tool(&c.name))).then_some(calls)
}

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
/// them). A tail cut off inside a value (the output cap) is dropped when complete calls
/// precede it; any other text after the calls spoils the whole reply.
fn json_sequence(text: &str) -> Option<Vec<ToolCall>> {
    let mut calls = Vec::new();
    for value in serde_json::Deserializer::from_str(text).into_iter::<Value>() {
        match value {
            Ok(v) => calls.extend(json_calls(v)?),
            Err(e) if e.is_eof() && !calls.is_empty() => break,
            Err(_) => return None,
        }
    }
    Some(calls)
}

/// A list of calls, `{"tool_calls": [...]}`, or one call object.
fn json_calls(value: Value) -> Option<Vec<ToolCall>> {
    match value {
        Value::Array(items) => items.iter().map(call_object).collect(),
        Value::Object(obj) if obj.contains_key("tool_calls") => {
            let extra_ok = obj.iter().all(|(k, v)| match k.as_str() {
                "tool_calls" => true,
                "role" => v.as_str() == Some("assistant"),
                "content" => v.is_null() || v.as_str() == Some(""),
                _ => false,
            });
            let list = obj.get("tool_calls")?.as_array()?;
            if !extra_ok {
                return None;
            }
            list.iter().map(call_object).collect()
        }
        v @ Value::Object(_) => Some(vec![call_object(&v)?]),
        _ => None,
    }
}

/// One call object. Only the call's own keys are allowed, so an answer that happens to be an
/// object with a `name` (a person, a package) is never mistaken for a call.
fn call_object(value: &Value) -> Option<ToolCall> {
    let obj = value.as_object()?;
    if let Some(function) = obj.get("function") {
        let only_wrapper = obj
            .keys()
            .all(|k| matches!(k.as_str(), "function" | "type" | "id" | "index"));
        return only_wrapper.then(|| call_object(function)).flatten();
    }
    if !obj.keys().all(|k| {
        matches!(
            k.as_str(),
            "name" | "arguments" | "parameters" | "id" | "type"
        )
    }) {
        return None;
    }
    let name = obj.get("name")?.as_str()?.trim();
    let args = obj.get("arguments").or_else(|| obj.get("parameters"))?;
    Some(ToolCall {
        id: String::new(),
        name: name.to_string(),
        arguments: Value::Object(arguments_object(args)?).to_string(),
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

/// `<tool_call>{…}</tool_call>` blocks with only whitespace between them.
fn hermes_blocks(text: &str) -> Option<Vec<ToolCall>> {
    const OPEN: &str = "<tool_call>";
    const CLOSE: &str = "</tool_call>";
    let mut calls = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let body = rest.strip_prefix(OPEN)?;
        let (inner, after) = match body.find(CLOSE) {
            Some(end) => (&body[..end], &body[end + CLOSE.len()..]),
            None => (body, ""),
        };
        calls.extend(json_calls(
            serde_json::from_str(unfence(inner.trim())).ok()?,
        )?);
        rest = after.trim_start();
    }
    Some(calls)
}

/// After `[TOOL_CALLS]`: JSON (a list or one object), or `name[ARGS]{…}` pairs.
fn mistral(rest: &str) -> Option<Vec<ToolCall>> {
    if rest.starts_with('[') || rest.starts_with('{') {
        return json_calls(serde_json::from_str(rest).ok()?);
    }
    let mut calls = Vec::new();
    for part in rest.split("[TOOL_CALLS]") {
        let (name, args) = part.split_once("[ARGS]")?;
        let name = name.trim();
        if name.is_empty() || name.contains(char::is_whitespace) {
            return None;
        }
        let args: Value = serde_json::from_str(args.trim()).ok()?;
        calls.push(ToolCall {
            id: String::new(),
            name: name.to_string(),
            arguments: Value::Object(arguments_object(&args)?).to_string(),
        });
    }
    Some(calls)
}

#[cfg(test)]
mod tests;
