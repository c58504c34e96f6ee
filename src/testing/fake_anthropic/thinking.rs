//! The check extended thinking makes: a tool-use turn of a model must come back to that model
//! with the `thinking` and `redacted_thinking` blocks it was sent with, unchanged and in their
//! place (before the turn's first `tool_use`). Anthropic answers 400 otherwise ("Expected
//! `thinking` or `redacted_thinking`, but found `tool_use`"; altered blocks fail their
//! signature check). A turn that is not in the request is not checked, and a request to
//! another model never is.

use serde_json::Value;

use super::wire::blocks;
use super::AnthropicReply;

/// One tool-use turn sent with thinking blocks.
#[derive(Debug)]
struct Turn {
    model: String,
    first_call: String,
    thinking: Vec<Value>,
}

#[derive(Debug, Default)]
pub(super) struct Issued {
    turns: Vec<Turn>,
}

fn is_thinking(block: &Value) -> bool {
    matches!(
        block.get("type").and_then(Value::as_str),
        Some("thinking" | "redacted_thinking")
    )
}

impl Issued {
    pub(super) fn record(&mut self, model: &str, reply: &AnthropicReply) {
        let Some((first_call, _, _)) = reply.tool_calls.first() else {
            return;
        };
        let thinking: Vec<Value> = blocks(reply).into_iter().filter(is_thinking).collect();
        if thinking.is_empty() {
            return;
        }
        self.turns.push(Turn {
            model: model.to_string(),
            first_call: first_call.clone(),
            thinking,
        });
    }

    /// `Err(message)` when `request` carries an earlier turn of its model without its thinking
    /// blocks, or with them altered or moved after a `tool_use`.
    pub(super) fn check(&self, request: &Value) -> Result<(), String> {
        let model = request.get("model").and_then(Value::as_str).unwrap_or("");
        let messages = request.get("messages").and_then(Value::as_array);
        for (n, message) in messages.into_iter().flatten().enumerate() {
            if message.get("role").and_then(Value::as_str) != Some("assistant") {
                continue;
            }
            let content = message.get("content").and_then(Value::as_array);
            let content: &[Value] = content.map_or(&[], |c| c);
            let id_of = |b: &Value| b.get("id").and_then(Value::as_str).map(str::to_string);
            let turn = self.turns.iter().find(|t| {
                t.model == model
                    && content
                        .iter()
                        .any(|b| id_of(b).as_deref() == Some(&t.first_call))
            });
            let Some(turn) = turn else { continue };
            let first_use = content
                .iter()
                .position(|b| b.get("type").and_then(Value::as_str) == Some("tool_use"))
                .unwrap_or(content.len());
            let before: Vec<&Value> = content[..first_use]
                .iter()
                .filter(|b| is_thinking(b))
                .collect();
            let sent: Vec<&Value> = turn.thinking.iter().collect();
            if before != sent {
                return Err(format!(
                    "messages.{n}.content.0: Expected `thinking` or `redacted_thinking`, but \
                     found `tool_use`. When `thinking` is enabled, a final `assistant` message \
                     must start with a thinking block (preceeding the lastmost set of \
                     `tool_use` and `tool_result` blocks); or the thinking blocks were modified."
                ));
            }
        }
        Ok(())
    }
}
