//! The answer side of judging: the normalised answer, and its principal number — the last
//! number of the answer once the tool calls it quotes and its list numbering are blanked out, so
//! that neither a call's arguments nor "3." of a list of steps stands in for a result.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

use super::{is_word, normalise};
use crate::agent::synthesis::is_call_dump;

/// An answer prepared once for every expectation of a task.
pub struct Answer {
    pub normalised: String,
    pub principal: Option<f64>,
}

impl Answer {
    pub fn new(raw: &str) -> Answer {
        Answer {
            normalised: normalise(raw),
            principal: last_number(&normalise(&ORDINAL.replace_all(&without_calls(raw), ""))),
        }
    }
}

/// Two numbers are the same up to floating-point noise (`0.1 + 0.2` against `0.3`), not up to
/// rounding: `54.2` is not `54.25`.
pub fn same_number(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

/// `value` (normalised) when it is a plain decimal number such as `-12` or `42.875`.
pub fn plain_number(value: &str) -> Option<f64> {
    let digits = value.strip_prefix('-').unwrap_or(value);
    let (int, frac) = digits.split_once('.').unwrap_or((digits, "0"));
    let all_digits = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_digit());
    if all_digits(int) && all_digits(frac) {
        value.parse().ok()
    } else {
        None
    }
}

/// The number of a numbered list's item (`3. ` or `3) ` opening a line): a position, not a value.
static ORDINAL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?m)^[ \t]*\d{1,3}[.)][ \t]+").expect("the ordinal pattern is valid")
});

/// `raw` with every embedded JSON value that is a tool call (as the dump guard sees it) replaced
/// by a space; a call the text ends in the middle of goes to the end.
fn without_calls(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut rest = raw;
    while let Some(at) = rest.find('{') {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        let mut stream = serde_json::Deserializer::from_str(tail).into_iter::<Value>();
        match stream.next() {
            Some(Ok(_)) if is_call_dump(&tail[..stream.byte_offset()]) => {
                out.push(' ');
                rest = &tail[stream.byte_offset()..];
                continue;
            }
            Some(Err(e)) if e.is_eof() && is_call_dump(tail) => return out,
            _ => {}
        }
        out.push('{');
        rest = &tail[1..];
    }
    out.push_str(rest);
    out
}

/// The last number of normalised `text` that stands alone: not glued to a letter or digit on
/// either side (`c03`, `391st`); a `-` right before it makes it negative unless it follows a
/// word or `)` (then it is a subtraction: `10-5`).
fn last_number(text: &str) -> Option<f64> {
    let chars: Vec<char> = text.chars().collect();
    let mut last = None;
    let mut i = 0;
    while i < chars.len() {
        let glued_before = i > 0 && (is_word(chars[i - 1]) || chars[i - 1] == '.');
        if !chars[i].is_ascii_digit() || glued_before {
            i += 1;
            continue;
        }
        let start = i;
        while i < chars.len() && chars[i].is_ascii_digit() {
            i += 1;
        }
        if i + 1 < chars.len() && chars[i] == '.' && chars[i + 1].is_ascii_digit() {
            i += 1;
            while i < chars.len() && chars[i].is_ascii_digit() {
                i += 1;
            }
        }
        if chars.get(i).is_some_and(|c| is_word(*c)) {
            continue;
        }
        let negative = start > 0
            && chars[start - 1] == '-'
            && (start < 2 || !(is_word(chars[start - 2]) || chars[start - 2] == ')'));
        let digits: String = chars[start..i].iter().collect();
        if let Ok(n) = digits.parse::<f64>() {
            last = Some(if negative { -n } else { n });
        }
    }
    last
}
