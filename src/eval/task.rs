//! An eval task (one line of the JSONL file) and how its answer is judged.
//!
//! An answer that is itself a tool call written as text — any shape the agent's dump guard
//! ([`crate::agent::synthesis::is_call_dump`]) recognises: call objects, JSON Lines of them,
//! JSON mode's `tool_call` action, fenced or cut off by the output cap — is never correct.
//! Otherwise `expect` is one of:
//! - a number (or a string that is one): the answer's principal number — its last number, not
//!   counting the numbers inside tool calls it quotes nor a numbered list's `3.` opening a line
//!   — must equal that value, compared as
//!   numbers ([`answer`]); so `391` matches "17 * 23 = **391**." but not "3910", "391.5",
//!   "391 or 3910" nor a list of tool results whose last item is another number;
//! - another string: the answer must contain that value as a whole token — not inside a longer
//!   word — after both are normalised (below);
//! - `{"regex": "..."}`: the regular expression must match somewhere in the normalised answer
//!   (anchor it with `^…$` for the whole answer; `(?i)` for any case);
//! - a list of the above: any one of them.
//!
//! Normalising (answer and plain values alike): markdown emphasis and code marks (`*`, `_`,
//! `` ` ``) are dropped, runs of whitespace become one space, letters are lowercased, the
//! thousands separators of a number go (`7,006,652` → `7006652`) and a number's zero decimals
//! too (`42.0` → `42`, `2.50` → `2.5`). A task with `tools_required` also needs each of those
//! tools to have run without an error at least once, so that a guessed answer does not count.

mod answer;

use regex::Regex;
use serde::Deserialize;
use serde_json::Value as Json;

use crate::agent::synthesis::is_call_dump;

/// One task as read from the file.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Task {
    pub id: String,
    pub query: String,
    pub expect: Expect,
    #[serde(default)]
    pub tools_required: Vec<String>,
}

/// What a correct answer contains.
#[derive(Clone, Debug)]
pub enum Expect {
    /// A number: the answer's principal number must equal it.
    Number(f64),
    /// Any other value, already normalised: the answer must contain it as a token.
    Value(String),
    Regex(Regex),
    AnyOf(Vec<Expect>),
}

impl<'de> Deserialize<'de> for Expect {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Expect::from_json(&Json::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

impl Expect {
    fn from_json(v: &Json) -> Result<Expect, String> {
        match v {
            Json::String(s) if !s.trim().is_empty() => {
                let value = normalise(s);
                Ok(answer::plain_number(&value).map_or(Expect::Value(value), Expect::Number))
            }
            Json::Number(n) => n
                .as_f64()
                .map(Expect::Number)
                .ok_or_else(|| format!("expect {n} is not a number this judge can compare")),
            Json::Array(items) if !items.is_empty() => items
                .iter()
                .map(Expect::from_json)
                .collect::<Result<_, _>>()
                .map(Expect::AnyOf),
            Json::Object(o) if o.len() == 1 && o.get("regex").is_some_and(Json::is_string) => {
                let pattern = o["regex"].as_str().unwrap_or_default();
                Regex::new(pattern)
                    .map(Expect::Regex)
                    .map_err(|e| format!("invalid regex {pattern:?}: {e}"))
            }
            other => Err(format!(
                "expect must be a non-empty string, a number, {{\"regex\": \"...\"}} or a \
                 non-empty list of those, got {other}"
            )),
        }
    }

    /// Whether `answer` satisfies this expectation (never when it is a tool-call dump).
    pub fn matches(&self, answer: &str) -> bool {
        !is_call_dump(answer) && self.matches_answer(&answer::Answer::new(answer))
    }

    fn matches_answer(&self, answer: &answer::Answer) -> bool {
        match self {
            Expect::Number(n) => answer.principal.is_some_and(|p| answer::same_number(p, *n)),
            Expect::Value(v) => contains_token(&answer.normalised, v),
            Expect::Regex(r) => r.is_match(&answer.normalised),
            Expect::AnyOf(all) => all.iter().any(|e| e.matches_answer(answer)),
        }
    }
}

/// Reads a JSONL task file: one task per non-blank line; ids must be unique.
/// The largest task file read: far beyond any eval, and a bound on what `/dev/zero` or a pipe
/// that never ends can take.
pub const MAX_TASK_FILE: u64 = 16 * 1024 * 1024;

/// The task file's text, read up to [`MAX_TASK_FILE`] bytes (larger: an error, not a read
/// without end).
pub fn read_tasks(path: &std::path::Path) -> Result<String, String> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let mut bytes = Vec::new();
    file.take(MAX_TASK_FILE + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    if bytes.len() as u64 > MAX_TASK_FILE {
        return Err(format!(
            "larger than {} MiB: not a task file",
            MAX_TASK_FILE / 1024 / 1024
        ));
    }
    String::from_utf8(bytes).map_err(|_| "not UTF-8 text".to_string())
}

pub fn parse_tasks(text: &str) -> Result<Vec<Task>, String> {
    let mut tasks: Vec<Task> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let task: Task = serde_json::from_str(line).map_err(|e| format!("line {}: {e}", i + 1))?;
        if task.query.trim().is_empty() {
            return Err(format!("line {}: the query is empty", i + 1));
        }
        if tasks.iter().any(|t| t.id == task.id) {
            return Err(format!("line {}: id {:?} is used twice", i + 1, task.id));
        }
        tasks.push(task);
    }
    if tasks.is_empty() {
        return Err("the file holds no task".into());
    }
    Ok(tasks)
}

/// `text` normalised as described in the module documentation.
pub fn normalise(text: &str) -> String {
    let plain: String = text
        .chars()
        .filter(|c| !matches!(c, '*' | '_' | '`'))
        .flat_map(char::to_lowercase)
        .collect();
    let spaced = plain.split_whitespace().collect::<Vec<_>>().join(" ");
    normalise_numbers(&spaced)
}

/// Drops thousands separators and zero decimals in every number of `text`.
fn normalise_numbers(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        if !chars[i].is_ascii_digit() || (i > 0 && is_word(chars[i - 1])) {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        let mut digits = String::new();
        // Integer part, with `,` taken as a separator only before exactly three digits.
        while i < chars.len() {
            if chars[i].is_ascii_digit() {
                digits.push(chars[i]);
                i += 1;
            } else if chars[i] == ',' && three_digits_at(&chars, i + 1) {
                i += 1;
            } else {
                break;
            }
        }
        if i + 1 < chars.len() && chars[i] == '.' && chars[i + 1].is_ascii_digit() {
            let mut decimals = String::new();
            i += 1;
            while i < chars.len() && chars[i].is_ascii_digit() {
                decimals.push(chars[i]);
                i += 1;
            }
            let decimals = decimals.trim_end_matches('0');
            if !decimals.is_empty() {
                digits = format!("{digits}.{decimals}");
            }
        }
        out.push_str(&digits);
    }
    out
}

fn three_digits_at(chars: &[char], at: usize) -> bool {
    let digit = |k: usize| chars.get(k).is_some_and(char::is_ascii_digit);
    digit(at) && digit(at + 1) && digit(at + 2) && !digit(at + 3)
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric()
}

/// Whether `needle` occurs in `hay` with no letter, digit or decimal point glued to either end.
fn contains_token(hay: &str, needle: &str) -> bool {
    hay.match_indices(needle).any(|(at, _)| {
        let before = hay[..at].chars().next_back();
        let after = hay[at + needle.len()..].chars().collect::<Vec<_>>();
        let glued_before = before.is_some_and(is_word);
        let glued_after = match after.first() {
            Some(c) if is_word(*c) => true,
            // "391.5" is another number; "391." ends a sentence.
            Some('.') => after.get(1).is_some_and(char::is_ascii_digit),
            _ => false,
        };
        !glued_before && !glued_after
    })
}

#[cfg(test)]
mod tests;
