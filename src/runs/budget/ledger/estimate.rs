//! Calls whose provider reported no usage — the counts absent, zero, negative or null, all read
//! as 0 — are charged reagent's estimate instead of nothing: the prompt as its reservation
//! estimated it, the reply at about 4 bytes a token. They are marked (`estimated_calls`), as
//! calls of unpriced models are, so a budget is never bypassed by a provider that says nothing
//! and nobody reads a guess, or a cost of 0, as a reported count.

use crate::llm::{ChatResponse, StreamEvent, Usage};

/// Bytes per estimated token, as the context guard counts them.
const BYTES_PER_TOKEN: usize = 4;

/// What a model wrote in one call, counted as it streams by.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Written {
    bytes: usize,
}

impl Written {
    /// The reply of a call that did not stream.
    pub fn of(r: &ChatResponse) -> Self {
        let calls: usize = r
            .tool_calls
            .iter()
            .map(|c| c.name.len() + c.arguments.len())
            .sum();
        let reasoning = r.reasoning_content.as_deref().map_or(0, str::len);
        Self {
            bytes: r.content.len() + calls + reasoning,
        }
    }

    /// Counts what `event` adds to the reply.
    pub fn add(&mut self, event: &StreamEvent) {
        self.bytes += match event {
            StreamEvent::Content(t) | StreamEvent::Reasoning(t) => t.len(),
            StreamEvent::ToolCalls(calls) => {
                calls.iter().map(|c| c.name.len() + c.arguments.len()).sum()
            }
            _ => 0,
        };
    }

    fn tokens(self) -> u64 {
        self.bytes.div_ceil(BYTES_PER_TOKEN) as u64
    }
}

/// `usage` as reported, or — when the provider left the prompt count out (a prompt is never 0
/// tokens), or the completion count while the model wrote something — with the missing counts
/// estimated (`prompt`: the call's estimated prompt) and the call marked estimated.
pub(super) fn reported_or_estimated(usage: Usage, prompt: u64, written: Written) -> Usage {
    let prompt_missing = usage.prompt_tokens == 0;
    let completion_missing = usage.completion_tokens == 0 && written.bytes > 0;
    if !prompt_missing && !completion_missing {
        return usage;
    }
    let p = match prompt_missing {
        true => prompt,
        false => usage.prompt_tokens,
    };
    let c = match completion_missing {
        true => written.tokens(),
        false => usage.completion_tokens,
    };
    Usage {
        estimated_calls: usage.llm_calls.max(1),
        ..Usage::call(p, c).with_cache(usage.cache_read_tokens, usage.cache_write_tokens)
    }
}

#[cfg(test)]
mod tests;
