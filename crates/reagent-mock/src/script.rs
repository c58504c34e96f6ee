//! What a non-streamed request gets: a forced DAG function's canned call, the demo model's
//! turn, or the scripted tool calls then the answer (native or JSON mode).

use serde_json::{json, Value};

use super::request::MockRequest;
use super::{demo, words, Shared};

/// A non-streamed reply: the assistant message, its finish reason and completion tokens.
pub(super) fn reply_message(
    shared: &Shared,
    request: &MockRequest,
    native: bool,
    done: usize,
) -> (Value, &'static str, u64) {
    let cfg = &shared.cfg;
    let mut forced = super::structured::forced_arguments(request.tool_choice.as_ref());
    if let (true, Some((name, args))) = (cfg.demo, forced.as_mut()) {
        if let Some(own) = demo::structured(name, &request.messages) {
            *args = own;
        }
    }
    if let Some((name, args)) = forced {
        return tool_calls(vec![(
            "call_mock_structured".into(),
            name,
            args.to_string(),
        )]);
    }
    if cfg.demo && native {
        return match demo::loop_turn(&request.messages) {
            demo::Turn::Calls(calls) => tool_calls(
                calls
                    .into_iter()
                    .map(|(id, tool, args)| (id, tool.to_string(), args.to_string()))
                    .collect(),
            ),
            demo::Turn::Text(text) => {
                let tokens = words(&text).len() as u64;
                (
                    json!({"role": "assistant", "content": text}),
                    "stop",
                    tokens,
                )
            }
        };
    }
    if !native {
        return json_mode_reply(shared, done);
    }
    if done < cfg.tool_iterations {
        let args = cfg.tool_args.replace("<i>", &done.to_string());
        return tool_calls(vec![(format!("call_mock_{done}"), cfg.tool.clone(), args)]);
    }
    let message = json!({"role": "assistant", "content": shared.answer});
    (message, "stop", cfg.answer_tokens as u64)
}

/// An assistant message calling `(id, tool, arguments JSON)`; tokens are argument bytes / 4.
fn tool_calls(calls: Vec<(String, String, String)>) -> (Value, &'static str, u64) {
    let mut bytes = 0;
    let calls: Vec<Value> = calls
        .into_iter()
        .map(|(id, name, args)| {
            bytes += args.len();
            json!({"id": id, "type": "function", "function": {"name": name, "arguments": args}})
        })
        .collect();
    let message = json!({"role": "assistant", "content": null, "tool_calls": calls});
    (message, "tool_calls", (bytes / 4).max(1) as u64)
}

/// JSON mode: a `tool_call` action while the script has calls left, then `final_answer`.
fn json_mode_reply(shared: &Shared, done: usize) -> (Value, &'static str, u64) {
    let cfg = &shared.cfg;
    let action = if done < cfg.tool_iterations {
        let args: Value = serde_json::from_str(&cfg.tool_args.replace("<i>", &done.to_string()))
            .unwrap_or_else(|_| json!({}));
        json!({"type": "tool_call", "reasoning": "the script calls a tool",
            "tool_name": cfg.tool, "tool_args": args})
    } else {
        json!({"type": "final_answer", "reasoning": "the script is done", "answer": shared.answer})
    }
    .to_string();
    let tokens = (action.len() / 4).max(1) as u64;
    (
        json!({"role": "assistant", "content": action}),
        "stop",
        tokens,
    )
}
