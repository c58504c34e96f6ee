//! What the mock provider reads of a chat request, and how it counts the run's tool results
//! since its query (the engine's own notes do not restart the count).

use serde::Deserialize;
use serde_json::Value;

use super::engine::{CONTEXT_NOTES, ENGINE_NOTES};

/// The few request fields the mock looks at; everything else is skipped unparsed.
#[derive(Deserialize)]
pub(super) struct MockRequest {
    #[serde(default)]
    pub(super) model: Option<String>,
    #[serde(default)]
    pub(super) stream: Option<bool>,
    #[serde(default)]
    pub(super) stream_options: Option<StreamOptions>,
    #[serde(default)]
    pub(super) tools: Option<Vec<serde::de::IgnoredAny>>,
    /// A forced function: DAG mode's structured calls (`structured.rs`).
    #[serde(default)]
    pub(super) tool_choice: Option<serde_json::Value>,
    #[serde(default)]
    pub(super) messages: Vec<MockMessage>,
}

#[derive(Deserialize)]
pub(super) struct StreamOptions {
    #[serde(default)]
    pub(super) include_usage: Option<bool>,
}

#[derive(Deserialize)]
pub(super) struct MockMessage {
    #[serde(default)]
    pub(super) role: String,
    #[serde(default)]
    pub(super) content: Option<Value>,
    /// Of a `tool` message: the call it answers (the demo script names its calls by tool).
    #[serde(default)]
    pub(super) tool_call_id: Option<String>,
}

impl MockMessage {
    pub(super) fn text(&self) -> Option<&str> {
        self.content.as_ref().and_then(Value::as_str)
    }

    fn is_observation(&self) -> bool {
        self.role == "user" && self.text().is_some_and(|c| c.starts_with("Observation:"))
    }

    /// A user message the engine wrote into the run (self-reflection, cycle warning, completion
    /// checklist, re-format request, interrupt, JSON-mode observation, context summary) rather
    /// than the query that started it.
    fn is_engine_note(&self) -> bool {
        self.role == "user"
            && self.text().is_some_and(|text| {
                ENGINE_NOTES.iter().any(|p| text.starts_with(p))
                    || CONTEXT_NOTES.iter().any(|p| text.contains(p))
            })
    }
}

/// The run's tool results so far: `tool` messages (native) or `Observation:` user messages (JSON
/// mode) after the run's query, the last user message the engine did not write. Counting from
/// the last user message of any kind restarted the script after every safeguard message.
pub(super) fn results_since_query(messages: &[MockMessage], native: bool) -> usize {
    let start = query_index(messages).map_or(0, |i| i + 1);
    messages[start..]
        .iter()
        .filter(|m| {
            if native {
                m.role == "tool"
            } else {
                m.is_observation()
            }
        })
        .count()
}

/// Where the run's query is: the last user message the engine did not write.
pub(super) fn query_index(messages: &[MockMessage]) -> Option<usize> {
    messages
        .iter()
        .rposition(|m| m.role == "user" && !m.is_engine_note())
}
