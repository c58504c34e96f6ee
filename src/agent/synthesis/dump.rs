//! Answers that are tool calls written as text. A small model handed a draft that is a call
//! dump tends to echo it back as the "answer"; the user must never get one. Such an answer is
//! replaced by one built from what the tools returned ([`observation_answer`]).

use super::super::record::StepRecord;
use crate::domain::text::clip;
use crate::llm::content_calls::parse_content_calls;

/// The last successful results an observation-built answer quotes.
const QUOTED_RESULTS: usize = 3;
/// Characters of each quoted result.
const QUOTED_CHARS: usize = 500;

/// `text` is made only of tool calls, in any shape the loop recovers from a reply (whatever
/// the names: a call to no tool is no better an answer than one to a real tool).
pub fn is_call_dump(text: &str) -> bool {
    parse_content_calls(text, |_| true).is_some()
}

/// "Here is what the tools returned:" and, one line each, the tool and the result of the last
/// [`QUOTED_RESULTS`] calls that succeeded (neither an error nor blocked), in the order they
/// ran, each cut to [`QUOTED_CHARS`] characters; `None` when no call succeeded.
pub fn observation_answer(steps: &[StepRecord]) -> Option<String> {
    let ok: Vec<&StepRecord> = steps.iter().filter(|s| !s.error && !s.blocked).collect();
    if ok.is_empty() {
        return None;
    }
    let mut text = String::from("Here is what the tools returned:");
    for s in &ok[ok.len().saturating_sub(QUOTED_RESULTS)..] {
        let result = clip(s.observation.trim(), QUOTED_CHARS);
        text.push_str(&format!("\n- {}: {result}", s.tool));
    }
    Some(text)
}

/// The answer to give instead of `draft` when `draft` is a call dump (the observations, when
/// any call succeeded); otherwise `draft` itself.
pub fn clean_draft(draft: &str, steps: &[StepRecord]) -> String {
    if is_call_dump(draft) {
        observation_answer(steps).unwrap_or_else(|| draft.to_string())
    } else {
        draft.to_string()
    }
}
