//! What was wrong with a JSON-mode reply [`parse_action`](super::parse_action) could not use,
//! said exactly, so that a model at temperature 0 can correct itself instead of sending the
//! same reply again. It names only what was missing: an example call in the request was what
//! a small model copied back (8 of 11 retries in issue 52's eval).

use serde_json::Value;

use super::{LIST_KEYS, NAME_KEYS};
use crate::llm::extract_json;

/// Why `content` is not an action, in a clause ("it is not a JSON object").
pub fn action_problem(content: &str) -> String {
    if content.trim().is_empty() {
        return "it was empty".into();
    }
    if super::cut_off(content) {
        return "it was cut off before its JSON object ended: keep it short".into();
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
    if !named && LIST_KEYS.iter().any(|k| obj.contains_key(*k)) {
        return r#"the first of its "calls" has no "tool_name""#.into();
    }
    if !named {
        return r#"it calls a tool but "tool_name" is missing"#.into();
    }
    "it could not be read as an action".into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_problem_is_named() {
        assert_eq!(action_problem("  "), "it was empty");
        assert_eq!(action_problem("I think 42"), "it is not a JSON object");
        assert_eq!(
            action_problem(r#"{"type": "tool_call", "tool_args": {}}"#),
            r#"it calls a tool but "tool_name" is missing"#
        );
        assert_eq!(
            action_problem(r#"{"type": "tool_call", "calls": [{"tool_args": {}}]}"#),
            r#"the first of its "calls" has no "tool_name""#
        );
        assert_eq!(
            action_problem(r#"{"type": "tool_call", "tool_args": {"x": "1"}, "reasoning": "Obs"#),
            "it was cut off before its JSON object ended: keep it short"
        );
    }
}
