//! `extract_json` (SPEC §5.2): finds one JSON **object** in the free text a model wrote.
//!
//! Models wrap JSON in prose, in Markdown fences, or break it slightly (a raw newline inside a
//! string, a trailing comma). The structured-output chain (SPEC §5.1) must cope with all of that
//! without ever panicking, so the search is tolerant but bounded:
//!
//! 1. the whole (trimmed) text, if it is an object;
//! 2. the content of each ```` ```json ```` / ```` ``` ```` fenced block, in order;
//! 3. the first balanced `{…}` found by a string-aware scan (braces inside strings and escaped
//!    quotes do not count); when a candidate does not parse even after repair, the scan restarts
//!    at the next `{`, for at most [`MAX_BRACE_CANDIDATES`] candidates.
//!
//! Every candidate is parsed as-is first, then once more after `repair`. Only objects are
//! returned: an array or a scalar is "no JSON" for our callers, who always ask for an object
//! (though the brace scan will still find an object nested inside an array).

use serde_json::Value;

/// How many `{` starting points the balanced scan tries before giving up.
///
/// Each candidate costs one linear scan of the rest of the text, so without a cap a text made
/// of 100 KB of `{` would take quadratic time. Real replies hold their object within the first
/// few braces; 64 leaves plenty of room for prose like "use {placeholders}" before it.
pub const MAX_BRACE_CANDIDATES: usize = 64;

/// Finds one JSON object in free text (SPEC §5.2). `None` when there is none.
pub fn extract_json(text: &str) -> Option<Value> {
    parse_object(text.trim())
        .or_else(|| fenced_blocks(text).find_map(|block| parse_object(block.trim())))
        .or_else(|| balanced_candidates(text).find_map(parse_object))
}

/// Parses `candidate` as an object, as-is then once repaired.
fn parse_object(candidate: &str) -> Option<Value> {
    // A cheap filter: neither parse can yield an object unless the text starts with `{`.
    if !candidate.starts_with('{') {
        return None;
    }
    let as_object = |s: &str| match serde_json::from_str::<Value>(s) {
        Ok(v @ Value::Object(_)) => Some(v),
        _ => None,
    };
    as_object(candidate).or_else(|| {
        let repaired = repair(candidate);
        // Repair changed nothing: the second parse would fail the same way.
        (repaired != candidate)
            .then(|| as_object(&repaired))
            .flatten()
    })
}

/// The contents of Markdown code fences, in order. An opening fence may carry a language tag
/// (`json`, `JSON`, `jsonc`…) on its own line or directly be followed by the content; an
/// unclosed fence runs to the end of the text (replies are sometimes cut off).
fn fenced_blocks(text: &str) -> impl Iterator<Item = &str> + '_ {
    const FENCE: &str = "```";
    let mut rest = text;
    std::iter::from_fn(move || {
        let open = rest.find(FENCE)?;
        let after = &rest[open + FENCE.len()..];
        let tag_len = after
            .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '+')))
            .unwrap_or(after.len());
        let body = &after[tag_len..];
        match body.find(FENCE) {
            Some(close) => {
                rest = &body[close + FENCE.len()..];
                Some(&body[..close])
            }
            None => {
                rest = "";
                Some(body)
            }
        }
    })
}

/// Balanced `{…}` substrings, one per `{` of the text (at most [`MAX_BRACE_CANDIDATES`]).
fn balanced_candidates(text: &str) -> impl Iterator<Item = &str> + '_ {
    text.match_indices('{')
        .take(MAX_BRACE_CANDIDATES)
        .filter_map(move |(start, _)| {
            balanced_end(&text[start..]).map(|len| &text[start..start + len])
        })
}

/// The byte length of the balanced object starting at `s[0] == '{'`, by a scan that knows
/// about strings and escapes. `None` when the text ends before the object closes.
///
/// Working on bytes is safe: `{`, `}`, `"` and `\` are ASCII and never occur inside a UTF-8
/// multi-byte sequence, so every index returned is a char boundary.
fn balanced_end(s: &str) -> Option<usize> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (i, b) in s.bytes().enumerate() {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' => depth += 1,
            b'}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
    }
    None
}

/// Light, linear repairs of almost-JSON: control characters inside strings are escaped (models
/// write raw newlines and tabs in long strings) and trailing commas before `}` or `]` are
/// dropped. Everything else is copied unchanged.
pub(crate) fn repair(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 16);
    let mut in_string = false;
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        if in_string {
            match c {
                _ if escaped => {
                    escaped = false;
                    out.push(c);
                }
                '\\' => {
                    escaped = true;
                    out.push(c);
                }
                '"' => {
                    in_string = false;
                    out.push(c);
                }
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                c if u32::from(c) < 0x20 => out.push_str(&format!("\\u{:04x}", u32::from(c))),
                c => out.push(c),
            }
            continue;
        }
        match c {
            '"' => {
                in_string = true;
                out.push(c);
            }
            ',' if closes_after_whitespace(&s[i + 1..]) => {}
            c => out.push(c),
        }
    }
    out
}

/// True when the next non-whitespace character is `}` or `]`, i.e. a comma before it is a
/// trailing comma. Only the whitespace run right after one comma is read, so the total work
/// over a whole repair stays linear.
fn closes_after_whitespace(rest: &str) -> bool {
    matches!(
        rest.trim_start_matches(|c: char| c.is_ascii_whitespace())
            .chars()
            .next(),
        Some('}' | ']')
    )
}

#[cfg(test)]
mod tests {
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
        // Priority order of SPEC §5.2: fences come before the brace scan.
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
}
