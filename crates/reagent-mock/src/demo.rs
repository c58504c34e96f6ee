//! The demo model's script (`reagent serve --demo`): it reads the question and answers it with
//! the built-in tools, arithmetic through `calculator` and the time through `current_time`, so
//! that a first run shows tool calls and a correct answer without a real model. Any other
//! question gets a reply saying what the demo can do and how to use a real model.

use serde_json::{json, Value};

use super::request::{query_index, MockMessage};

/// The answer to anything the script cannot do with its tools.
pub const HELP: &str = "I am reagent's **demo model**: my answers are scripted, there is no \
real LLM behind me. I can still show how an agent works: ask me to compute something (\"What is \
17 * 23?\", \"2 ** 32\") and I call the `calculator` tool, or ask what time it is (\"What time is \
it in Tokyo?\") and I call `current_time`. For real answers, start reagent without `--demo`, with \
`LLM_API_KEY` set (or `LLM_BASE_URL` pointing at a local model server).";

/// Cities a time question may name, with their IANA zones.
const CITIES: [(&str, &str); 10] = [
    ("tokyo", "Asia/Tokyo"),
    ("london", "Europe/London"),
    ("paris", "Europe/Paris"),
    ("berlin", "Europe/Berlin"),
    ("new york", "America/New_York"),
    ("san francisco", "America/Los_Angeles"),
    ("los angeles", "America/Los_Angeles"),
    ("sydney", "Australia/Sydney"),
    ("beijing", "Asia/Shanghai"),
    ("utc", "UTC"),
];

/// What the demo model says in the tool loop.
pub(super) enum Turn {
    /// Tool calls: `(call id, tool, arguments)`.
    Calls(Vec<(String, &'static str, Value)>),
    /// The final (loop) answer.
    Text(String),
}

/// The tools the question asks for, as calls.
fn calls_for(query: &str) -> Vec<(String, &'static str, Value)> {
    let mut calls = Vec::new();
    if let Some(expression) = expression_in(query) {
        calls.push((
            "call_demo_calculator".to_string(),
            "calculator",
            json!({ "expression": expression }),
        ));
    }
    let lower = query.to_lowercase();
    let mut words = lower.split(|c: char| !c.is_alphanumeric());
    if words.any(|w| ["time", "clock", "date", "today"].contains(&w)) {
        let args = match zone_in(&lower) {
            Some(zone) => json!({ "timezone": zone }),
            None => json!({}),
        };
        calls.push(("call_demo_current_time".to_string(), "current_time", args));
    }
    calls
}

/// The loop's reply: the question's tool calls until their results are in, then an answer
/// made of the results.
pub(super) fn loop_turn(messages: &[MockMessage]) -> Turn {
    let Some(at) = query_index(messages) else {
        return Turn::Text(HELP.to_string());
    };
    let query = messages[at].text().unwrap_or_default();
    let calls = calls_for(query);
    if calls.is_empty() {
        return Turn::Text(HELP.to_string());
    }
    let results: Vec<(&str, &str)> = messages[at + 1..]
        .iter()
        .filter(|m| m.role == "tool")
        .map(|m| {
            let id = m.tool_call_id.as_deref().unwrap_or_default();
            (id, m.text().unwrap_or_default())
        })
        .collect();
    if results.is_empty() {
        return Turn::Calls(calls);
    }
    let sentences: Vec<String> = calls
        .iter()
        .filter_map(|(id, tool, args)| {
            let (_, result) = results.iter().find(|(r, _)| r == id)?;
            Some(sentence(tool, args, result))
        })
        .collect();
    Turn::Text(sentences.join(" "))
}

/// One result in words.
fn sentence(tool: &str, args: &Value, result: &str) -> String {
    if tool == "calculator" {
        let expression = args["expression"].as_str().unwrap_or_default();
        return if result.parse::<f64>().is_ok() {
            format!("{expression} = **{result}** (worked out by the calculator tool).")
        } else {
            format!("The calculator could not work out `{expression}`: {result}")
        };
    }
    match args["timezone"].as_str() {
        Some(zone) => format!("The time in {zone} is {result} (from the current_time tool)."),
        None => format!("The time (UTC) is {result} (from the current_time tool)."),
    }
}

/// DAG mode's forced functions, answered for one question: a plan of a single step (the
/// question itself, so its tools run once) and the router's choice of the ReAct loop.
pub(super) fn structured(name: &str, messages: &[MockMessage]) -> Option<Value> {
    let query = query_index(messages)
        .and_then(|at| messages[at].text())
        .unwrap_or_default();
    match name {
        "create_plan" => Some(json!({"steps": [
            {"id": "s1", "task": query, "dependencies": []}
        ]})),
        "choose_engine" => Some(json!({"engine": "react", "reasoning": "one question, one loop"})),
        _ => None,
    }
}

/// The streamed answer of the synthesis call: the draft the loop wrote, which the synthesis
/// prompt carries after `Draft answer:`; the help text for any other streamed request.
pub(super) fn streamed_text(messages: &[MockMessage]) -> String {
    messages
        .iter()
        .rev()
        .filter(|m| m.role == "user")
        .find_map(|m| m.text()?.rsplit_once("\nDraft answer:\n"))
        .map(|(_, draft)| draft.trim().to_string())
        .filter(|draft| !draft.is_empty())
        .unwrap_or_else(|| HELP.to_string())
}

/// The longest run of arithmetic in `text` (`17 * 23`, `2 ** 32`, `(1 + 2) / 3`), with the
/// words people use for operators turned into symbols.
pub fn expression_in(text: &str) -> Option<String> {
    let mut spelled = format!(" {} ", text.to_lowercase());
    for (word, symbol) in [
        (" times ", " * "),
        (" plus ", " + "),
        (" minus ", " - "),
        (" divided by ", " / "),
        (" to the power of ", " ** "),
    ] {
        spelled = spelled.replace(word, symbol);
    }
    let arithmetic = |c: char| c.is_ascii_digit() || " .+-*/^%()".contains(c);
    spelled
        .split(|c: char| !arithmetic(c))
        .map(|run| {
            run.trim()
                .trim_end_matches(['+', '-', '*', '/', '^', '%', ' '])
        })
        .map(|run| run.trim_start_matches(['+', '*', '/', '^', '%', ' ']))
        .filter(|run| has_operation(run))
        .max_by_key(|run| run.len())
        .map(str::to_string)
}

/// Digits on both sides of an operator: `17 * 23` is arithmetic, `-5` and `2026` are not.
fn has_operation(run: &str) -> bool {
    let Some(first) = run.find(|c: char| c.is_ascii_digit()) else {
        return false;
    };
    let rest = &run[first..];
    let Some(op) = rest.find(['+', '-', '*', '/', '^', '%']) else {
        return false;
    };
    rest[op..].contains(|c: char| c.is_ascii_digit())
}

/// The IANA zone of a city the question names, or an `Area/City` name written in it.
fn zone_in(lower: &str) -> Option<String> {
    if let Some((_, zone)) = CITIES.iter().find(|(city, _)| lower.contains(city)) {
        return Some((*zone).to_string());
    }
    lower
        .split(|c: char| c.is_whitespace() || matches!(c, '?' | ',' | '!'))
        .find(|w| w.contains('/') && w.chars().all(|c| c.is_alphabetic() || "/_".contains(c)))
        .map(|w| {
            // IANA names are capitalised per part: europe/paris → Europe/Paris.
            w.split('/')
                .map(|part| {
                    let mut chars = part.chars();
                    chars.next().map_or(String::new(), |c| {
                        c.to_uppercase().collect::<String>() + chars.as_str()
                    })
                })
                .collect::<Vec<_>>()
                .join("/")
        })
}

#[cfg(test)]
mod tests;
