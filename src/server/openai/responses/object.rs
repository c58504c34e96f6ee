//! The response object (docs/protocols.md) with every field the Open Responses schema requires:
//! what the run produced so far (`status`, `output`, `usage`…) and what the request asked for
//! ([`Echo`]), repeated. Built from stored data only, so every instance builds the same one.

use serde_json::{json, Value};
use uuid::Uuid;

use super::request::Echo;
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
