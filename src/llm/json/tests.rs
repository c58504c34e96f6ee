use super::*;
use proptest::prelude::*;
use serde_json::json;

#[test]
fn whole_text_object() {
    assert_eq!(extract_json("  {\"a\": 1}\n"), Some(json!({"a": 1})));
}

#[test]
fn fenced_json_block() {
    let text = "Here you go:\n```json\n{\"tools\": [\"search\", \"calc\"]}\n```\nDone.";
    assert_eq!(
        extract_json(text),
        Some(json!({"tools": ["search", "calc"]}))
    );
}

#[test]
fn bare_fence_and_inline_fence() {
    assert_eq!(
        extract_json("```\n{\"a\": true}\n```"),
        Some(json!({"a": true}))
    );
    assert_eq!(extract_json("x ```{\"a\": 2}``` y"), Some(json!({"a": 2})));
}

#[test]
fn fence_wins_over_earlier_prose_object() {
    // Priority order of extract_json: fences come before the brace scan.
    let text = "Example shape {\"a\": 0}.\n```json\n{\"a\": 1}\n```";
    assert_eq!(extract_json(text), Some(json!({"a": 1})));
}

#[test]
fn non_json_fence_is_skipped() {
    let text = "```python\nprint('hi')\n```\nThe answer is {\"ok\": true} as requested.";
    assert_eq!(extract_json(text), Some(json!({"ok": true})));
}

#[test]
fn prose_around() {
    let text = "Sure! The result is {\"x\": [1, 2, {\"y\": null}]} — hope that helps.";
    assert_eq!(extract_json(text), Some(json!({"x": [1, 2, {"y": null}]})));
}

#[test]
fn braces_inside_strings_do_not_count() {
    let text = r#"Result: {"msg": "use } and { freely", "n": {"m": "}}"}} trailing }"#;
    assert_eq!(
        extract_json(text),
        Some(json!({"msg": "use } and { freely", "n": {"m": "}}"}}))
    );
}

#[test]
fn escaped_quotes_inside_strings() {
    let text = r#"ok {"q": "she said \"{hi}\" \\", "k": 1} end"#;
    assert_eq!(
        extract_json(text),
        Some(json!({"q": "she said \"{hi}\" \\", "k": 1}))
    );
}

#[test]
fn trailing_commas_are_removed() {
    let text = "{\"a\": [1, 2, ], \"b\": {\"c\": 3,\n},\n}";
    assert_eq!(
        extract_json(text),
        Some(json!({"a": [1, 2], "b": {"c": 3}}))
    );
}

#[test]
fn comma_inside_string_is_kept() {
    let text = "{\"a\": \"x, }\", }";
    assert_eq!(extract_json(text), Some(json!({"a": "x, }"})));
}

#[test]
fn raw_newline_and_tab_in_string() {
    let text = "{\"text\": \"line one\nline\ttwo\u{1}\"}";
    assert_eq!(
        extract_json(text),
        Some(json!({"text": "line one\nline\ttwo\u{1}"}))
    );
}

#[test]
fn no_json_at_all() {
    assert_eq!(extract_json(""), None);
    assert_eq!(extract_json("I could not find anything."), None);
    assert_eq!(extract_json("{ not json } and {neither}"), None);
}

#[test]
fn array_only_is_not_an_object() {
    assert_eq!(extract_json("[1, 2, 3]"), None);
    assert_eq!(
        extract_json("```json\n[{\"a\": 1}]\n```"),
        Some(json!({"a": 1}))
    );
    assert_eq!(extract_json("\"just a string\""), None);
}

#[test]
fn first_broken_candidate_falls_through_to_next_brace() {
    let text = "template {name} then {\"name\": \"Ada\"}";
    assert_eq!(extract_json(text), Some(json!({"name": "Ada"})));
    // The outer candidate is balanced but invalid; the inner one is valid.
    let nested = "{broken {\"inner\": 1} }";
    assert_eq!(extract_json(nested), Some(json!({"inner": 1})));
}

#[test]
fn unicode_text_and_values() {
    let text = "Voilà 🎉 : {\"ville\": \"Zürich\", \"emoji\": \"😀\", \"日本\": \"語\"} fin";
    assert_eq!(
        extract_json(text),
        Some(json!({"ville": "Zürich", "emoji": "😀", "日本": "語"}))
    );
}

#[test]
fn candidate_cap_bounds_pathological_input() {
    // 100 KB of `{` then a valid object: beyond the cap, so not found, and quickly.
    let mut text = "{".repeat(100_000);
    text.push_str("{\"a\": 1}");
    let started = std::time::Instant::now();
    assert_eq!(extract_json(&text), None);
    // Generous bound: a quadratic scan would take tens of seconds here.
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    // Within the cap, the object is found behind stray braces.
    let mut near = "{ ".repeat(MAX_BRACE_CANDIDATES - 1);
    near.push_str("{\"a\": 1}");
    assert_eq!(extract_json(&near), Some(json!({"a": 1})));
}

#[test]
fn repair_is_identity_on_valid_json() {
    let valid = r#"{"a": [1, {"b": "c, ]"}], "d": "\n"}"#;
    assert_eq!(repair(valid), valid);
}

/// Arbitrary JSON objects without floats (serde_json does not promise float round trips)
/// and without backticks in strings (a "```{}```" inside a string is a fence, by design).
fn object_strategy() -> impl Strategy<Value = Value> {
    let string = "[^`]{0,12}";
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        string.prop_map(Value::String),
    ];
    let value = leaf.prop_recursive(4, 32, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(string, inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    });
    prop::collection::btree_map(string, value, 0..6)
        .prop_map(|m| Value::Object(m.into_iter().collect()))
}

proptest! {
    #[test]
    fn never_panics_on_arbitrary_strings(text in any::<String>()) {
        let _ = extract_json(&text);
    }

    #[test]
    fn never_panics_on_json_like_noise(text in r#"[{}\[\]",:\\ \n\tab01`]{0,200}"#) {
        if let Some(v) = extract_json(&text) {
            prop_assert!(v.is_object());
        }
    }

    #[test]
    fn embedded_object_is_found_back(
        object in object_strategy(),
        before in "[^{}`]{0,40}",
        after in "[^{}`]{0,40}",
        pretty in any::<bool>(),
    ) {
        let serialised = if pretty {
            serde_json::to_string_pretty(&object)
        } else {
            serde_json::to_string(&object)
        };
        let serialised = serialised.map_err(|e| TestCaseError::fail(e.to_string()))?;
        let text = format!("{before}{serialised}{after}");
        prop_assert_eq!(extract_json(&text), Some(object));
    }
}
