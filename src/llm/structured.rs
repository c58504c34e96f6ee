//! placeholder (helper B): `structured_llm_call` (SPEC §5.1).
use serde_json::Value;

use super::{Llm, Message, Usage};

/// Turns the raw JSON into the caller's domain value; an error degrades to the next level.
pub type ParseFn<'a, T> = Box<dyn Fn(&Value) -> Result<T, String> + Send + Sync + 'a>;
/// Last-chance extraction from plain text at level 3.
pub type RegexFallback<'a> = Box<dyn Fn(&str) -> Option<Value> + Send + Sync + 'a>;

/// One structured request.
pub struct StructuredCall<'a, T> {
    /// The conversation to send (system + user, typically).
    pub messages: Vec<Message>,
    /// Name of the forced function at level 1.
    pub schema_name: String,
    /// JSON Schema the value must follow.
    pub schema: Value,
    pub parse_fn: ParseFn<'a, T>,
    /// Returned (level 0) when every level fails, instead of an error.
    pub default_value: Option<T>,
    pub regex_fallback: Option<RegexFallback<'a>>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct StructuredResult<T> {
    pub value: T,
    /// The parsed JSON before `parse_fn` (Null when `default_value` was used).
    pub raw: Value,
    /// 1 native function call, 2 JSON mode, 3 plain text, 0 the default value.
    pub level: u8,
    pub llm_calls: u32,
    /// Summed over every attempt.
    pub usage: Usage,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StructuredError {
    #[error("no level produced a usable value after {llm_calls} LLM calls: {last_error}")]
    Exhausted {
        llm_calls: u32,
        usage: Usage,
        last_error: String,
    },
}

pub async fn structured_llm_call<T>(
    _llm: &dyn Llm,
    _call: StructuredCall<'_, T>,
) -> Result<StructuredResult<T>, StructuredError> {
    Err(StructuredError::Exhausted {
        llm_calls: 0,
        usage: Usage::default(),
        last_error: "not implemented yet".into(),
    })
}
