//! What was wrong with a JSON-mode reply [`parse_action`](super::parse_action) could not use,
//! said exactly, so that a model at temperature 0 can correct itself instead of sending the
//! same reply again.

use serde_json::Value;

use super::NAME_KEYS;
use crate::llm::{extract_json, ToolDefinition};

/// Why `content` is not an action, in a clause ("it is not a JSON object").
pub fn action_problem(content: &str) -> String {
    if content.trim().is_empty() {
        return "it was empty".into();
    }
    let Some(value) = extract_json(content) else {
        return "it is not a JSON object".into();
    };
    let Value::Object(obj) = value else {
        return "it is JSON but not one object".into();
    };
    let named = NAME_KEYS.iter().any(|k| {
        obj.get(*k)
            .and_then(Value::as_str)
            .is_some_and(|s| !s.trim().is_empty())
    });
    if !named {
        return r#"it has "type": "tool_call" but no "tool_name""#.into();
    }
    "it could not be read as an action".into()
}

/// A one-line valid tool call for the first of `tools` (its first parameter shown), or a
/// placeholder when the run has no tools.
pub fn example_call(tools: &[ToolDefinition]) -> String {
    let Some(def) = tools.first() else {
        return r#"{"type": "tool_call", "reasoning": "...", "tool_name": "...", "tool_args": {}}"#
            .into();
    };
    let param = def
        .parameters
        .get("properties")
        .and_then(Value::as_object)
        .and_then(|p| p.keys().next().cloned());
    let args = match param {
        Some(p) => format!("{{{}: \"...\"}}", Value::String(p)),
        None => "{}".into(),
    };
    format!(
        r#"{{"type": "tool_call", "reasoning": "...", "tool_name": {}, "tool_args": {args}}}"#,
        Value::String(def.name.clone())
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_problem_is_named() {
        assert_eq!(action_problem("  "), "it was empty");
        assert_eq!(action_problem("I think 42"), "it is not a JSON object");
        assert_eq!(
            action_problem(r#"{"type": "tool_call", "tool_args": {}}"#),
            r#"it has "type": "tool_call" but no "tool_name""#
        );
    }

    #[test]
    fn the_example_uses_a_real_tool_and_parameter() {
        let def = ToolDefinition {
            name: "calculator".into(),
            description: String::new(),
            parameters: json!({"type": "object", "properties": {"expression": {}}}),
        };
        assert_eq!(
            example_call(&[def]),
            r#"{"type": "tool_call", "reasoning": "...", "tool_name": "calculator", "tool_args": {"expression": "..."}}"#
        );
        assert!(example_call(&[]).contains(r#""tool_name": "...""#));
    }
}
