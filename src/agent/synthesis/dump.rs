//! Answers that are tool calls written as text. A small model handed a draft that is a call
//! dump tends to echo it back as the "answer"; the user must never get one. Such an answer is
//! replaced by one built from what the tools returned ([`observation_answer`]).

use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

use super::super::record::StepRecord;
use crate::domain::text::clip;
use crate::llm::content_calls::{call_text, opens_object, parse_content_calls};

/// The last successful results an observation-built answer quotes.
const QUOTED_RESULTS: usize = 3;
/// Characters of each quoted result.
const QUOTED_CHARS: usize = 500;

/// `text` is made only of tool calls (whatever the names: a call to no tool is no better an
/// answer than one to a real tool): in any shape the loop recovers from a reply (schema keys
/// copied into the call object included), in JSON mode's action format (`{"type": "tool_call",
/// …}`), one fence each, followed by an object that is no call, or cut off by the output cap —
/// complete calls then an unfinished one, or only the opening of one (`{"name": "calculator",
/// "argu`).
pub fn is_call_dump(text: &str) -> bool {
    parse_content_calls(text, |_| true).is_some()
        || written_calls(&FENCE.replace_all(call_text(text), " "))
}

/// A Markdown fence marker with its language tag: a reply may put each call in its own fence.
static FENCE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new("```[A-Za-z]*").expect("the fence pattern is valid"));

/// One or more call values, then nothing, an unfinished value, or an object that is no call (as
/// the loop's recovery stops at one); prose after the calls spoils it.
fn written_calls(body: &str) -> bool {
    let body = body
        .strip_prefix("<tool_call>")
        .map_or(body, str::trim_start);
    let mut stream = serde_json::Deserializer::from_str(body).into_iter::<Value>();
    let mut complete = 0;
    loop {
        let at = stream.byte_offset();
        match stream.next() {
            None => return complete > 0,
            Some(Ok(v)) if is_call_value(&v) => complete += 1,
            Some(Err(e)) if e.is_eof() => {
                return complete > 0 || CALL_OPENING.is_match(&body[at..])
            }
            Some(Ok(_)) => return complete > 0,
            Some(Err(_)) => return complete > 0 && opens_object(&body[at..]),
        }
    }
}

/// A call in any shape [`parse_content_calls`] knows, or a JSON-mode tool-call action.
fn is_call_value(v: &Value) -> bool {
    let action = v.get("type").and_then(Value::as_str) == Some("tool_call");
    action || parse_content_calls(&v.to_string(), |_| true).is_some()
}

/// The start of a call the output cap cut off: a call object (`name` first, then only its
/// arguments), OpenAI's wrapper, a `tool_calls` list, or a JSON-mode `tool_call` action — an
/// object with a `name` that goes on with other keys is data, not a call.
static CALL_OPENING: LazyLock<Regex> = LazyLock::new(|| {
    let name = r#""name"\s*:\s*"[^"]*("\s*(,\s*("(arguments|parameters)("\s*(:[\s\S]*)?)?)?)?)?"#;
    let wrapper = r#"("type"\s*:\s*"function"\s*,\s*)?"function"\s*:"#;
    let list = r#""tool_calls"\s*:"#;
    let action = r#"[\s\S]*"type"\s*:\s*"tool_call""#;
    let pattern = format!(r#"^\s*\[?\s*\{{\s*(({name})$|{wrapper}|{list}|{action})"#);
    Regex::new(&pattern).expect("the call-opening pattern is valid")
});

/// "Here is what the tools returned:" and, one line each, the tool and the result of the last
/// [`QUOTED_RESULTS`] distinct calls (tool and arguments) that succeeded (neither an error nor
/// blocked), newest new result first, each cut to [`QUOTED_CHARS`] characters; `None` when no
/// call succeeded. A call repeated with the same result keeps the place of its first result (a
/// small model's repeats push out neither the other results nor the order they came in); one
/// whose result changed (a poll) moves up with its latest result.
pub fn observation_answer(steps: &[StepRecord]) -> Option<String> {
    let mut ok: Vec<&StepRecord> = Vec::new();
    for s in steps.iter().filter(|s| !s.error && !s.blocked) {
        let same_call = |o: &&StepRecord| o.tool == s.tool && o.arguments == s.arguments;
        match ok.iter().position(same_call) {
            Some(i) if ok[i].observation == s.observation => continue,
            Some(i) => {
                ok.remove(i);
            }
            None => {}
        }
        ok.push(s);
    }
    if ok.is_empty() {
        return None;
    }
    let mut text = String::from("Here is what the tools returned:");
    for s in ok.iter().rev().take(QUOTED_RESULTS) {
        let result = clip(s.observation.trim(), QUOTED_CHARS);
        text.push_str(&format!("\n- {}: {result}", s.tool));
    }
    Some(text)
}

/// What a dump is replaced by when no call succeeded: the call itself is never the answer.
pub const NO_RESULT: &str = "I could not answer this: my reply was a tool call instead of an \
answer, and no tool returned a result to answer from.";

/// The answer to give instead of `draft` when `draft` is a call dump (the observations, or
/// [`NO_RESULT`] when no call succeeded); otherwise `draft` itself.
pub fn clean_draft(draft: &str, steps: &[StepRecord]) -> String {
    if is_call_dump(draft) {
        observation_answer(steps).unwrap_or_else(|| NO_RESULT.to_string())
    } else {
        draft.to_string()
    }
}

#[cfg(test)]
mod tests;
