//! JSON-mode action parsing (SPEC §2.2–2.3). The model replies with one JSON object; this turns
//! its free text into an [`Action`], tolerating the usual deviations: prose or fences around the
//! object (via `extract_json`), a missing or unknown `type` (a final answer), a missing
//! `tool_args` (`{}`), `tool_args` sent as a JSON string.

use serde_json::{Map, Value};

use crate::llm::extract_json;

#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    ToolCall {
        reasoning: String,
        tool_name: String,
        tool_args: Value,
    },
    FinalAnswer {
        reasoning: String,
        answer: String,
    },
}

fn text_field(obj: &Map<String, Value>, key: &str) -> Option<String> {
    match obj.get(key)? {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

/// `None` when no JSON object can be found (the loop asks for a reformat).
pub fn parse_action(content: &str) -> Option<Action> {
    let value = extract_json(content)?;
    let obj = value.as_object()?;
    let reasoning = text_field(obj, "reasoning").unwrap_or_default();
    let kind = obj.get("type").and_then(Value::as_str).unwrap_or("");
    if kind == "tool_call" {
        let tool_name = text_field(obj, "tool_name").filter(|n| !n.trim().is_empty())?;
        let tool_args = match obj.get("tool_args") {
            None | Some(Value::Null) => Value::Object(Map::new()),
            Some(Value::String(s)) => {
                serde_json::from_str::<Value>(s).unwrap_or(Value::Object(Map::new()))
            }
            Some(v) => v.clone(),
        };
        return Some(Action::ToolCall {
            reasoning,
            tool_name,
            tool_args,
        });
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
