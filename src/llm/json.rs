//! `extract_json`: finds one JSON **object** in the free text a model wrote.
//!
//! Models wrap JSON in prose, in Markdown fences, or break it slightly (a raw newline inside a
//! string, a trailing comma). The structured-output chain must cope with all of that
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

/// Finds one JSON object in free text. `None` when there is none.
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

/// A JSON schema kept as the text it was written as: a grammar built from it (llama.cpp's)
/// orders an object's keys as its `properties` lists them, which a `serde_json::Value` (keys
/// sorted) would lose.
#[derive(Clone, Debug)]
pub struct SchemaText(std::sync::Arc<serde_json::value::RawValue>);

impl SchemaText {
    pub fn new(schema: &impl serde::Serialize) -> serde_json::Result<Self> {
        Ok(Self(std::sync::Arc::from(serde_json::value::to_raw_value(
            schema,
        )?)))
    }

    pub fn get(&self) -> &str {
        self.0.get()
    }
}

impl PartialEq for SchemaText {
    fn eq(&self, other: &Self) -> bool {
        self.get() == other.get()
    }
}

impl Eq for SchemaText {}

impl serde::Serialize for SchemaText {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

#[cfg(test)]
mod tests;
