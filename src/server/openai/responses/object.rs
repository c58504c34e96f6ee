//! The response object (docs/protocols.md) with every field the Open Responses schema requires:
//! what the run produced so far (`status`, `output`, `usage`…) and what the request asked for
//! ([`Echo`]), repeated, with its items and the status a run's outcome reads as. Built from
//! stored data only, so every instance builds the same one.

use serde_json::{json, Value};
use uuid::Uuid;

use super::request::Echo;
use crate::agent::RunOutcome;
use crate::domain::RunStatus;
use crate::llm::Usage;

/// What every object and event of one response repeats.
#[derive(Debug)]
pub struct Context {
    pub run_id: Uuid,
    pub conversation_id: Uuid,
    /// When the run started, in milliseconds since the Unix epoch.
    pub started_ms: i64,
    pub echo: Echo,
}

impl Context {
    pub fn id(&self) -> String {
        response_id(self.run_id)
    }
}

/// `resp_<run id>`.
pub fn response_id(run_id: Uuid) -> String {
    format!("resp_{run_id}")
}

/// How a response ended, or that it has not.
#[derive(Debug, Default)]
pub struct Ending {
    /// `in_progress`, `completed`, `incomplete`, `failed` or `cancelled`.
    pub status: &'static str,
    pub completed_at: Option<i64>,
    pub usage: Option<Usage>,
    pub error: Option<String>,
    pub incomplete_reason: Option<&'static str>,
}

pub fn usage_json(u: &Usage) -> Value {
    json!({
        "input_tokens": u.prompt_tokens,
        "input_tokens_details": {"cached_tokens": u.cache_read_tokens},
        "output_tokens": u.completion_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": u.total_tokens,
        "cost_usd": u.cost_usd.usd(),
        "unpriced_calls": u.unpriced_calls,
        "estimated_calls": u.estimated_calls,
    })
}

/// The whole object.
pub fn response(ctx: &Context, ending: &Ending, output: &[Value]) -> Value {
    let e = &ctx.echo;
    json!({
        "id": ctx.id(),
        "object": "response",
        "created_at": ctx.started_ms.div_euclid(1000),
        "completed_at": ending.completed_at,
        "status": ending.status,
        "incomplete_details": ending.incomplete_reason.map(|r| json!({"reason": r})),
        "model": e.model,
        "previous_response_id": e.previous_response_id,
        "instructions": e.instructions,
        "output": output,
        "error": ending.error.as_ref().map(|m| json!({"code": "server_error", "message": m})),
        "tools": e.tools,
        "tool_choice": e.tool_choice,
        "truncation": "disabled",
        "parallel_tool_calls": true,
        "text": {"format": {"type": "text"}},
        "top_p": e.top_p.unwrap_or(1.0),
        "presence_penalty": 0.0,
        "frequency_penalty": 0.0,
        "top_logprobs": 0,
        "temperature": e.temperature.unwrap_or(1.0),
        "reasoning": null,
        "user": e.user,
        "usage": ending.usage.as_ref().map(usage_json),
        "max_output_tokens": e.max_output_tokens,
        "max_tool_calls": null,
        "store": e.store,
        "background": e.background,
        "service_tier": "default",
        "metadata": e.metadata,
        "safety_identifier": null,
        "prompt_cache_key": null,
        "conversation": {"id": ctx.conversation_id.to_string()},
    })
}

pub(super) fn in_progress() -> Ending {
    Ending {
        status: "in_progress",
        ..Ending::default()
    }
}

/// How the run's outcome reads as a response (docs/protocols.md): the iteration cap is
/// `incomplete` (`max_iterations`), a cancel `cancelled`, a failure `failed` with its error.
pub(super) fn ending(ctx: &Context, outcome: Option<&RunOutcome>) -> Ending {
    let Some(o) = outcome else {
        return Ending {
            status: "failed",
            error: Some("the run's final event could not be read".into()),
            ..Ending::default()
        };
    };
    let completed_at = Some((ctx.started_ms + o.elapsed_ms as i64).div_euclid(1000));
    let base = Ending {
        usage: Some(o.usage),
        ..Ending::default()
    };
    match o.status {
        // Waiting for caller tools is `completed`, the calls in the output (docs/protocols.md).
        RunStatus::Completed | RunStatus::RequiresAction | RunStatus::Running => Ending {
            status: "completed",
            completed_at,
            ..base
        },
        RunStatus::MaxIterations => Ending {
            status: "incomplete",
            completed_at,
            incomplete_reason: Some("max_iterations"),
            ..base
        },
        // The answer came from what the run found before its budget ran out.
        RunStatus::BudgetExceeded => Ending {
            status: "incomplete",
            completed_at,
            incomplete_reason: Some("budget_exceeded"),
            ..base
        },
        RunStatus::Cancelled => Ending {
            status: "cancelled",
            incomplete_reason: Some("cancelled"),
            ..base
        },
        RunStatus::Failed => Ending {
            status: "failed",
            error: Some(o.error.clone().unwrap_or_else(|| "the run failed".into())),
            ..base
        },
    }
}

pub(super) fn text_part(text: &str) -> Value {
    json!({"type": "output_text", "text": text, "annotations": [], "logprobs": []})
}

pub(super) fn message_item(id: &str, status: &str, text: Option<&str>) -> Value {
    let content: Vec<Value> = text.map(text_part).into_iter().collect();
    json!({"type": "message", "id": id, "status": status, "role": "assistant", "content": content})
}

/// A tool's arguments as the JSON text Responses items carry.
pub(super) fn arguments_text(arguments: &Value) -> String {
    match arguments {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// The MCP server label of the agent's own tool calls (`mcp_call` items).
pub(super) const SERVER_LABEL: &str = "reagent";

/// One of the agent's own tool calls as the Responses API's item for a tool the server ran, an
/// `mcp_call` (never `function_call`, which a client would run): the OpenAI SDKs parse it as
/// their own type, where a `reagent:` item made the Python SDK warn at every event.
pub(super) fn tool_item(call_id: &str, name: &str, arguments: &Value) -> Value {
    json!({
        "type": "mcp_call",
        "id": format!("mcp_{call_id}"),
        "call_id": call_id,
        "status": "in_progress",
        "server_label": SERVER_LABEL,
        "name": name,
        "arguments": arguments_text(arguments),
        "output": null,
        "error": null,
    })
}

/// Ends a tool item: its observation as `output`; a failed or blocked call is `failed` with the
/// observation also as its `error` (the SDK's `mcp_tool_execution_error`).
pub(super) fn end_tool_item(item: &mut Value, observation: String, failed: bool) {
    if failed {
        item["status"] = "failed".into();
        item["error"] = json!({"type": "mcp_tool_execution_error", "content": observation});
    } else {
        item["status"] = "completed".into();
    }
    item["output"] = observation.into();
}
