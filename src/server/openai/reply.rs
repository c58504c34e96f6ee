//! What a completion and its chunks share, non-streamed (`completions`) and streamed
//! (`stream`): the repeated identity, the finish reason, the usage object.

use serde_json::{json, Value};

use crate::domain::RunStatus;
use crate::llm::Usage;

/// What every response and chunk of one completion repeats.
#[derive(Clone, Debug)]
pub struct Meta {
    pub id: String,
    pub model: String,
    pub created: u64,
}

/// `stop`, or `length` when the run hit its iteration cap.
pub fn finish_reason(status: RunStatus) -> &'static str {
    match status {
        RunStatus::MaxIterations => "length",
        _ => "stop",
    }
}

/// OpenAI's usage object; the prompt-cache reads go where OpenAI reports them.
pub fn usage_json(u: &Usage) -> Value {
    json!({
        "prompt_tokens": u.prompt_tokens,
        "completion_tokens": u.completion_tokens,
        "total_tokens": u.total_tokens,
        "prompt_tokens_details": {"cached_tokens": u.cache_read_tokens},
    })
}
