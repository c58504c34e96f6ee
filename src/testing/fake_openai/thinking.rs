//! The fake as a thinking model's provider: what it sent with each tool-call turn, and the check
//! that a later request to the same model gives it back unchanged.
//!
//! DeepSeek (thinking mode) answers 400 "The `reasoning_content` in the thinking mode must be
//! passed back to the API" when an assistant turn with tool calls comes back without its
//! `reasoning_content`; Gemini 3 answers 400 "Function call is missing a thought_signature"
//! when a tool call comes back without its `extra_content.google.thought_signature`. This fake
//! does the same, and also refuses them altered (both providers validate what they get back). A
//! turn that is not in the request at all (another conversation, a compacted history) is not
//! checked, and a request to another model never is: the turn belongs to its model.

use serde_json::{json, Value};

use super::FakeReply;

/// `{"google": {"thought_signature": <signature>}}`.
pub(super) fn signature(signature: &str) -> Value {
    json!({"google": {"thought_signature": signature}})
}

/// One tool-call turn the fake sent.
#[derive(Debug)]
struct Turn {
    model: String,
    /// Each call's id and the `extra_content` it was sent with.
    calls: Vec<(String, Option<Value>)>,
    reasoning: Option<String>,
}

/// The tool-call turns sent so far.
#[derive(Debug, Default)]
pub(super) struct Issued {
    turns: Vec<Turn>,
}

impl Issued {
    /// Remembers a reply about to be sent for `model` (only tool-call turns are checked).
    pub(super) fn record(&mut self, model: &str, reply: &FakeReply) {
        if reply.tool_calls.is_empty() {
            return;
        }
        let calls = reply
            .tool_calls
            .iter()
            .enumerate()
            .map(|(n, (id, _, _))| (id.clone(), reply.call_extras.get(n).cloned().flatten()))
            .collect();
        self.turns.push(Turn {
            model: model.to_string(),
            calls,
            reasoning: reply.reasoning.clone(),
        });
    }

    /// `Err(body)` when `request` carries an earlier turn of its model without what was sent
    /// with it, or with it altered.
    pub(super) fn check(&self, request: &Value) -> Result<(), String> {
        let model = request.get("model").and_then(Value::as_str).unwrap_or("");
        let messages = request.get("messages").and_then(Value::as_array);
        for turn in self.turns.iter().filter(|t| t.model == model) {
            let Some(first) = turn.calls.first().map(|(id, _)| id.as_str()) else {
                continue;
            };
            let message = messages.into_iter().flatten().find(|m| {
                m.get("role").and_then(Value::as_str) == Some("assistant")
                    && calls(m).any(|c| c.get("id").and_then(Value::as_str) == Some(first))
            });
            if let Some(message) = message {
                check_turn(turn, message)?;
            }
        }
        Ok(())
    }
}

fn calls(message: &Value) -> impl Iterator<Item = &Value> {
    message
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

fn check_turn(turn: &Turn, message: &Value) -> Result<(), String> {
    if let Some(sent) = &turn.reasoning {
        let back = message.get("reasoning_content").and_then(Value::as_str);
        if back != Some(sent.as_str()) {
            return Err(error(
                "The reasoning_content in the thinking mode must be passed back to the API.",
            ));
        }
    }
    for (id, extra) in &turn.calls {
        let Some(extra) = extra else { continue };
        let call = calls(message).find(|c| c.get("id").and_then(Value::as_str) == Some(id));
        if call.and_then(|c| c.get("extra_content")) != Some(extra) {
            return Err(error(&format!(
                "Function call is missing a thought_signature in functionCall parts ({id})."
            )));
        }
    }
    Ok(())
}

fn error(message: &str) -> String {
    json!({"error": {"message": message, "type": "invalid_request_error", "code": 400}}).to_string()
}
