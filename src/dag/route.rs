//! `engine: auto`: one structured call asks the run's model whether the query needs
//! a multi-step plan. Anything but a clear `dag` — an error, garbage, an unknown engine — is
//! `react`.

use serde_json::{json, Value};

use super::prompts::ROUTER_SYSTEM;
use crate::agent::synthesis::truncate_chars;
use crate::domain::Engine;
use crate::llm::{structured_llm_call, Llm, Message, StructuredCall, Usage};
use crate::telemetry::{with_call_kind, CallKind};

/// Characters of the query the router reads.
const QUERY_CHARS: usize = 2000;

/// The engine for `query`, and what asking cost.
pub async fn route(llm: &dyn Llm, query: &str) -> (Engine, Usage) {
    let call = StructuredCall {
        messages: vec![
            Message::system(ROUTER_SYSTEM),
            Message::user(truncate_chars(query, QUERY_CHARS)),
        ],
        schema_name: "choose_engine".into(),
        schema: json!({
            "type": "object",
            "properties": {
                "engine": {"type": "string", "enum": ["react", "dag"]},
                "reasoning": {"type": "string"}
            },
            "required": ["engine", "reasoning"]
        }),
        parse_fn: Box::new(|v: &Value| {
            match v.get("engine").and_then(Value::as_str).map(str::trim) {
                Some("dag") => Ok(Engine::Dag),
                Some("react") => Ok(Engine::React),
                other => Err(format!("unknown engine {other:?}")),
            }
        }),
        default_value: Some(Engine::React),
        regex_fallback: None,
    };
    match with_call_kind(CallKind::Routing, structured_llm_call(llm, call)).await {
        Ok(r) => (r.value, r.usage),
        // Unreachable with a default value; react all the same.
        Err(crate::llm::StructuredError::Exhausted { usage, .. }) => (Engine::React, usage),
    }
}
