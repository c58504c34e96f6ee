//! What a completion and its chunks share, non-streamed (`completions`) and streamed
//! (`stream`): the repeated identity, the finish reason, the usage object.

use serde_json::{json, Value};
use uuid::Uuid;

use crate::agent::caller_tools::CallerCall;
use crate::domain::RunStatus;
use crate::llm::Usage;

/// What every response and chunk of one completion repeats.
#[derive(Clone, Debug)]
pub struct Meta {
    pub id: String,
    pub model: String,
    pub created: u64,
    /// The run answering: a caller tool call's id names it (see [`wire_call_id`]).
    pub run_id: Uuid,
}

/// `stop`, `length` when the run hit its iteration cap or its budget, `tool_calls` when it waits for the
/// caller's tools.
pub fn finish_reason(status: RunStatus) -> &'static str {
    match status {
        RunStatus::MaxIterations | RunStatus::BudgetExceeded => "length",
        RunStatus::RequiresAction => "tool_calls",
        _ => "stop",
    }
}

/// OpenAI's usage object; the prompt-cache reads go where OpenAI reports them, and the cost
/// (docs/api.md "Usage and cost") rides along as extra fields, which OpenAI's clients keep.
pub fn usage_json(u: &Usage) -> Value {
    json!({
        "prompt_tokens": u.prompt_tokens,
        "completion_tokens": u.completion_tokens,
        "total_tokens": u.total_tokens,
        "prompt_tokens_details": {"cached_tokens": u.cache_read_tokens},
        "cost_usd": u.cost_usd.usd(),
        "unpriced_calls": u.unpriced_calls,
        "estimated_calls": u.estimated_calls,
    })
}

/// The id a `/v1` client sees for a call of the paused run `run_id`: the run's id and the
/// call's, so the request carrying its result finds the run without any other state.
pub fn wire_call_id(run_id: Uuid, call_id: &str) -> String {
    format!("call_{}_{call_id}", run_id.simple())
}

/// The run and call named by a [`wire_call_id`]; `None` for any other id.
pub fn parse_wire_call_id(id: &str) -> Option<(Uuid, String)> {
    let rest = id.strip_prefix("call_")?;
    let (run, call) = rest.split_at_checked(32)?;
    let call = call.strip_prefix('_')?;
    Some((Uuid::try_parse(run).ok()?, call.to_string()))
}

/// `message.tool_calls` (with `index` for `delta.tool_calls` when `indexed`).
pub fn tool_calls_json(run_id: Uuid, calls: &[CallerCall], indexed: bool) -> Value {
    let calls: Vec<Value> = calls
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let mut v = json!({
                "id": wire_call_id(run_id, &c.call_id),
                "type": "function",
                "function": {"name": c.name, "arguments": c.arguments},
            });
            if indexed {
                v["index"] = json!(i);
            }
            v
        })
        .collect();
    Value::Array(calls)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wire_call_id_names_its_run_and_call() {
        let run = Uuid::new_v4();
        let id = wire_call_id(run, "c2_x");
        assert_eq!(parse_wire_call_id(&id), Some((run, "c2_x".to_string())));
        assert_eq!(parse_wire_call_id("call_abc"), None);
        assert_eq!(parse_wire_call_id("c2"), None);
    }
}
