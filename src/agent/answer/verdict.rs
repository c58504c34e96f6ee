//! Replies to a safeguard's prompt (the self-reflection, the cycle warning, the completion
//! checklist: docs/api.md "Safeguards") that are a verdict on the work rather than an answer.
//!
//! The rule: a reply is a verdict when its first sentence answers the prompt instead of the
//! user — it opens with a yes or a no ("Yes, the answer is fully correct…", "No
//! contradictions.") or with a confirmation ("Correct", "Confirmed", "Verified", "Indeed"), or it
//! speaks of the checks themselves: being on track, the answer being complete or correct,
//! contradictions, what was verified. Anything else — the corrected answer, a new one — is an
//! answer in its own right. The first sentence is what decides, so a verdict that goes on to
//! quote a result is still a verdict: the answer written before the prompt stands.

/// First words that answer a safeguard's question rather than the user's.
const OPENERS: [&str; 12] = [
    "yes",
    "yeah",
    "yep",
    "yup",
    "no",
    "correct",
    "confirmed",
    "verified",
    "indeed",
    "affirmative",
    "oui",
    "ja",
];

/// Phrases of a first sentence that speak of the checks, not of the user's question.
const ABOUT_THE_CHECKS: [&str; 16] = [
    "on track",
    "fully address",
    "fully answer",
    "fully correct",
    "is correct and complete",
    "answer is correct",
    "answer is complete",
    "answer is accurate",
    "answer above",
    "previous answer",
    "my answer",
    "no contradiction",
    "contradictions",
    "verified from",
    "verified by",
    "the checklist",
];

/// Whether `reply` (with no tool call, answering a safeguard's prompt) is a verdict on the work
/// rather than an answer; see the module docs.
pub fn is_verdict(reply: &str) -> bool {
    let sentence = first_sentence(reply).to_lowercase();
    let first_word: String = sentence.chars().take_while(|c| c.is_alphabetic()).collect();
    OPENERS.contains(&first_word.as_str()) || ABOUT_THE_CHECKS.iter().any(|p| sentence.contains(p))
}

/// The reply's first sentence, past Markdown marks and a list number ("1.", "**", "- ").
fn first_sentence(reply: &str) -> &str {
    let text = reply.trim_start_matches(|c: char| {
        c.is_whitespace() || matches!(c, '*' | '#' | '>' | '-' | '_' | '`' | '"')
    });
    let text = match text.find(|c: char| !c.is_ascii_digit()) {
        Some(i) if i > 0 && text[i..].starts_with(['.', ')']) => text[i + 1..].trim_start(),
        _ => text,
    };
    let text = text.trim_start_matches(|c: char| c.is_whitespace() || matches!(c, '*' | '_'));
    let end = text
        .char_indices()
        .find(|&(i, c)| matches!(c, '!' | '?' | '\n') || (c == '.' && ends_sentence(text, i)))
        .map_or(text.len(), |(i, _)| i);
    &text[..end]
}

/// A period at `i` ends the sentence unless it sits inside a number ("2400.15").
fn ends_sentence(text: &str, i: usize) -> bool {
    let next = text[i + 1..].chars().next();
    !matches!(next, Some(c) if c.is_ascii_digit())
}
