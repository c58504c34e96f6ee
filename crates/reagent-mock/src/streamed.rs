//! What a streamed request gets. A loop call of `synthesis = "auto"` or `"never"` — one that
//! offers tools (native mode), or whose system prompt is JSON mode's (it names `final_answer`)
//! — gets the same turn as a non-streamed one (`script.rs`), streamed: tool calls in the finish
//! chunk, a JSON-mode `tool_call` action with the role chunk, and a text — native, or the
//! `answer` of a JSON-mode `final_answer` between the action's opening and its close — one
//! paced word per chunk. Any other streamed request (the synthesis call, a plain request) gets
//! the answer text (the demo model: the draft the synthesis prompt carries).

use std::sync::Arc;

use serde_json::{json, Value};

use super::engine::SYNTHESIS_SYSTEM;
use super::reply::Streamed;
use super::request::MockRequest;
use super::script::reply_message;
use super::{demo, literals, words, Shared};

/// Whether the request is a loop call (see the module docs); `native`: it offers tools.
pub(super) fn is_loop_call(request: &MockRequest, native: bool) -> bool {
    let system = request
        .messages
        .first()
        .filter(|m| m.role == "system")
        .and_then(|m| m.text());
    match system {
        Some(SYNTHESIS_SYSTEM) => false,
        Some(prompt) => native || prompt.contains("\"final_answer\""),
        None => native,
    }
}

/// The synthesis call's answer: the configured text, or the demo model's draft.
pub(super) fn synthesis(shared: &Shared, request: &MockRequest) -> Streamed {
    let tokens = if shared.cfg.demo {
        literals(&words(&demo::streamed_text(&request.messages)))
    } else {
        Arc::clone(&shared.token_literals)
    };
    Streamed::text(tokens)
}

/// A loop call's turn, streamed (see the module docs).
pub(super) fn loop_turn(
    shared: &Shared,
    request: &MockRequest,
    native: bool,
    done: usize,
) -> Streamed {
    let (message, finish, completion) = reply_message(shared, request, native, done);
    if let Some(calls) = message.get("tool_calls").and_then(Value::as_array) {
        let indexed: Vec<Value> = calls
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let mut c = c.clone();
                c["index"] = json!(i);
                c
            })
            .collect();
        return Streamed {
            head: String::new(),
            tokens: Arc::from(Vec::new()),
            tail: json!({ "tool_calls": indexed }).to_string(),
            finish,
            completion_tokens: Some(completion),
        };
    }
    let content = message["content"].as_str().unwrap_or_default();
    if native {
        let tokens = if content == shared.answer {
            Arc::clone(&shared.token_literals)
        } else {
            literals(&words(content))
        };
        return Streamed::text(tokens);
    }
    json_action(content, completion)
}

/// A JSON-mode action: a `final_answer`'s answer paced word by word inside the action's text,
/// anything else sent whole.
fn json_action(content: &str, completion: u64) -> Streamed {
    let action: Value = serde_json::from_str(content).unwrap_or(Value::Null);
    let Some(answer) = action
        .get("answer")
        .and_then(Value::as_str)
        .filter(|_| action["type"] == "final_answer")
    else {
        return Streamed {
            head: content.to_string(),
            tokens: Arc::from(Vec::new()),
            tail: "{}".into(),
            finish: "stop",
            completion_tokens: Some(completion),
        };
    };
    // Each word as it appears inside the action's JSON string (escaped), as a literal.
    let inner: Vec<String> = words(answer)
        .iter()
        .map(|w| {
            let quoted = json!(w).to_string();
            quoted[1..quoted.len() - 1].to_string()
        })
        .collect();
    let reasoning = action["reasoning"].as_str().unwrap_or_default();
    let close = format!("\", \"reasoning\": {}}}", json!(reasoning));
    Streamed {
        head: r#"{"type": "final_answer", "answer": ""#.to_string(),
        tokens: literals(&inner),
        tail: json!({ "content": close }).to_string(),
        finish: "stop",
        completion_tokens: Some(completion),
    }
}
