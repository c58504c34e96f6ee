//! The token estimate of the context guard, run before every loop LLM call, and the provider-protocol
//! check every compaction keeps ([`is_well_formed`]).

use std::io;

use crate::llm::{Message, Role, ToolDefinition};

/// Bytes of English or JSON per token, the estimate's one ratio (also how the synthesis trace
/// turns a token budget into bytes).
pub const BYTES_PER_TOKEN: usize = 4;
/// Tokens a provider adds around each message (role markers, separators). OpenAI documents ~3–4.
pub const MESSAGE_OVERHEAD_TOKENS: usize = 4;
/// What an image counts for, whatever its size (providers bill by resolution; a fixed estimate
/// keeps the guard linear and allocation-free).
pub const IMAGE_TOKENS: usize = 1_000;
/// Tokens a provider adds around each tool definition (`{"type":"function","function":…}`).
pub const TOOL_OVERHEAD_TOKENS: usize = 8;

/// Estimated prompt tokens of these messages plus these tool definitions.
///
/// No tokenizer is available, so this is the usual documented estimate (about 4 bytes of English
/// or JSON per token, see [`estimate_message_tokens`] and [`estimate_tool_tokens`]). It errs on
/// the generous side for English and under-counts dense scripts (CJK); the provider's typed
/// "context length exceeded" error and the engine's forced compaction cover the difference.
pub fn estimate_tokens(messages: &[Message], tools: &[ToolDefinition]) -> usize {
    estimate_message_tokens(messages) + estimate_tool_tokens(tools)
}

/// Estimated tokens of the messages alone: for each message,
/// `ceil(bytes / 4) + MESSAGE_OVERHEAD_TOKENS`, where `bytes` counts what a provider receives —
/// the content, the tool-call ids, names and raw arguments, a tool message's `tool_call_id`, and
/// the JSON of an assistant turn's continuity (sent back to the model that produced it).
/// `reasoning_content` is not counted: it is never sent back to the provider.
///
/// Runs before every loop LLM call, so it allocates nothing and is linear in the history.
pub fn estimate_message_tokens(messages: &[Message]) -> usize {
    messages.iter().map(message_tokens).sum()
}

/// Estimated tokens of the tool definitions: for each tool,
/// `ceil((name + description + JSON length of the parameters schema) / 4) + TOOL_OVERHEAD_TOKENS`.
///
/// The tool set is fixed for a run, so callers compute this once and pass it to
/// [`ContextGuard::over_budget_with_tool_tokens`]. The schema length is measured by serialising
/// into a byte counter, not into a string.
pub fn estimate_tool_tokens(tools: &[ToolDefinition]) -> usize {
    tools
        .iter()
        .map(|t| {
            let bytes = t.name.len() + t.description.len() + json_len(&t.parameters);
            bytes.div_ceil(BYTES_PER_TOKEN) + TOOL_OVERHEAD_TOKENS
        })
        .sum()
}

pub(super) fn message_tokens(m: &Message) -> usize {
    let calls: usize = m
        .tool_calls
        .iter()
        .map(|c| c.id.len() + c.name.len() + c.arguments.len())
        .sum();
    let id = m.tool_call_id.as_deref().map_or(0, str::len);
    let kept = m
        .continuity
        .as_deref()
        .map_or(0, |c| json_len(&c.message) + json_len(&c.tool_calls));
    (m.content.len() + calls + id + kept).div_ceil(BYTES_PER_TOKEN)
        + MESSAGE_OVERHEAD_TOKENS
        + m.images.len() * IMAGE_TOKENS
}

/// Length of the compact JSON text of `value`, without building the text.
pub fn json_len<T: serde::Serialize + ?Sized>(value: &T) -> usize {
    struct Counter(usize);
    impl io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    // Serialising a `Value` into a writer that never fails cannot fail; 0 would only under-count.
    match serde_json::to_writer(&mut counter, value) {
        Ok(()) => counter.0,
        Err(_) => 0,
    }
}

/// True when the history respects the provider protocol: every assistant message with
/// `tool_calls` is followed directly by one `tool` message per call (any order, nothing in
/// between), and every `tool` message answers a call of that assistant message. Providers
/// reject anything else, so the engine may `debug_assert!` it before each call.
pub fn is_well_formed(messages: &[Message]) -> bool {
    // Call ids of the last assistant `tool_calls` message still waiting for their result.
    let mut pending: Vec<&str> = Vec::new();
    for m in messages {
        if m.role == Role::Tool {
            let Some(id) = m.tool_call_id.as_deref() else {
                return false;
            };
            match pending.iter().position(|p| *p == id) {
                Some(i) => {
                    pending.swap_remove(i);
                }
                None => return false,
            }
            continue;
        }
        if !pending.is_empty() {
            return false;
        }
        if m.role == Role::Assistant {
            pending.extend(m.tool_calls.iter().map(|c| c.id.as_str()));
        }
    }
    pending.is_empty()
}
