//! Token usage: the counters a run sums ([`Usage`]) and the provider's `usage` object as read
//! from the wire ([`WireUsage`]), in either protocol's names. `prompt_tokens` counts the whole
//! prompt, as OpenAI's does; the cache counts are the parts of it read from or written to the
//! provider's prompt cache (Anthropic's `input_tokens` leaves them out, so they are added back). Usage is accounting, not content: a provider that sends a
//! float, a string, a negative number or nonsense costs the count (read as absent), never the
//! reply and its tool calls. Sums saturate at [`MAX_COUNT`], which both databases can store,
//! so a run's usage in its `done` event is the one `GET /api/runs` reads back.

use std::ops::{Add, AddAssign};

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use crate::domain::Cost;

/// The largest count kept: `i64::MAX`, the largest `BIGINT` (PostgreSQL) and `INTEGER` (SQLite).
pub const MAX_COUNT: u64 = i64::MAX.unsigned_abs();

fn sum(a: u64, b: u64) -> u64 {
    a.saturating_add(b).min(MAX_COUNT)
}

/// Token usage. `llm_calls` counts calls so that sums over a run say how many calls were made.
/// The cache counts are 0 when the provider said nothing (and in checkpoints written before
/// they existed). `cost_usd` is the cost of the priced calls; `unpriced_calls` counts the calls of models
/// without a price, whose cost is left out; `estimated_calls` the calls whose provider reported
/// no usage, counted at reagent's estimate (docs/api.md).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub total_tokens: u64,
    pub llm_calls: u64,
    #[serde(default)]
    pub cache_read_tokens: u64,
    #[serde(default)]
    pub cache_write_tokens: u64,
    #[serde(default)]
    pub cost_usd: Cost,
    #[serde(default)]
    pub unpriced_calls: u64,
    #[serde(default)]
    pub estimated_calls: u64,
}

impl Usage {
    /// The usage of one call, each count at most [`MAX_COUNT`].
    pub fn call(prompt_tokens: u64, completion_tokens: u64) -> Self {
        let (p, c) = (
            prompt_tokens.min(MAX_COUNT),
            completion_tokens.min(MAX_COUNT),
        );
        Self {
            prompt_tokens: p,
            completion_tokens: c,
            total_tokens: sum(p, c),
            llm_calls: 1,
            cache_read_tokens: 0,
            cache_write_tokens: 0,
            cost_usd: Cost::ZERO,
            unpriced_calls: 0,
            estimated_calls: 0,
        }
    }

    /// This usage with the prompt-cache counts of its call.
    pub fn with_cache(mut self, read: u64, write: u64) -> Self {
        self.cache_read_tokens = read.min(MAX_COUNT);
        self.cache_write_tokens = write.min(MAX_COUNT);
        self
    }
}

impl Add for Usage {
    type Output = Usage;
    fn add(self, o: Usage) -> Usage {
        Usage {
            prompt_tokens: sum(self.prompt_tokens, o.prompt_tokens),
            completion_tokens: sum(self.completion_tokens, o.completion_tokens),
            total_tokens: sum(self.total_tokens, o.total_tokens),
            llm_calls: sum(self.llm_calls, o.llm_calls),
            cache_read_tokens: sum(self.cache_read_tokens, o.cache_read_tokens),
            cache_write_tokens: sum(self.cache_write_tokens, o.cache_write_tokens),
            cost_usd: self.cost_usd + o.cost_usd,
            unpriced_calls: sum(self.unpriced_calls, o.unpriced_calls),
            estimated_calls: sum(self.estimated_calls, o.estimated_calls),
        }
    }
}

impl AddAssign for Usage {
    fn add_assign(&mut self, o: Usage) {
        *self = *self + o;
    }
}

/// Token counts as providers send them, in OpenAI's names (`prompt_tokens`,
/// `completion_tokens`, `prompt_tokens_details.cached_tokens` and llama.cpp's
/// `.cache_write_tokens`, DeepSeek's `prompt_cache_hit_tokens`) or Anthropic's (`input_tokens`,
/// `output_tokens`, `cache_read_input_tokens`, `cache_creation_input_tokens`, which llama.cpp's
/// `/v1/messages` sends too): any field may be missing or malformed, the object may be empty or
/// not an object at all. Never fails to deserialize.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct WireUsage {
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
    /// Anthropic's uncached part of the prompt (the cache counts come on top).
    pub input_tokens: Option<u64>,
    pub cache_read: Option<u64>,
    pub cache_write: Option<u64>,
}

impl<'de> Deserialize<'de> for WireUsage {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(d)?;
        let field = |names: &[&str]| names.iter().find_map(|n| value.pointer(n).and_then(count));
        Ok(Self {
            prompt_tokens: field(&["/prompt_tokens"]),
            completion_tokens: field(&["/completion_tokens", "/output_tokens"]),
            input_tokens: field(&["/input_tokens"]),
            cache_read: field(&[
                "/prompt_tokens_details/cached_tokens",
                "/cache_read_input_tokens",
                "/prompt_cache_hit_tokens",
            ]),
            cache_write: field(&[
                "/prompt_tokens_details/cache_write_tokens",
                "/cache_creation_input_tokens",
            ]),
        })
    }
}

impl WireUsage {
    /// The usage of one call; `llm_calls` is 1 whatever the provider reported.
    pub fn to_usage(usage: Option<&WireUsage>) -> Usage {
        let Some(u) = usage else {
            return Usage::call(0, 0);
        };
        let (read, write) = (u.cache_read.unwrap_or(0), u.cache_write.unwrap_or(0));
        let prompt = u.prompt_tokens.unwrap_or_else(|| match u.input_tokens {
            Some(input) => sum(sum(input, read), write),
            None => 0,
        });
        Usage::call(prompt, u.completion_tokens.unwrap_or(0)).with_cache(read, write)
    }

    /// Adds what a later report of the same call says (Anthropic streams the input counts
    /// first and the output count at the end): a field it carries replaces the earlier one.
    pub fn update(&mut self, later: WireUsage) {
        let take = |old: &mut Option<u64>, new: Option<u64>| {
            if new.is_some() {
                *old = new;
            }
        };
        take(&mut self.prompt_tokens, later.prompt_tokens);
        take(&mut self.completion_tokens, later.completion_tokens);
        take(&mut self.input_tokens, later.input_tokens);
        take(&mut self.cache_read, later.cache_read);
        take(&mut self.cache_write, later.cache_write);
    }
}

/// A count as a provider may write it: a non-negative integer as is, a finite non-negative
/// float truncated, a string holding either; anything else is no count.
fn count(v: &Value) -> Option<u64> {
    match v {
        Value::Number(n) => n.as_u64().or_else(|| n.as_f64().and_then(from_float)),
        Value::String(s) => {
            let s = s.trim();
            s.parse::<u64>()
                .ok()
                .or_else(|| s.parse::<f64>().ok().and_then(from_float))
        }
        _ => None,
    }
}

#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // Checked finite, >= 0.
fn from_float(f: f64) -> Option<u64> {
    // `as` saturates at u64::MAX for floats past it.
    (f.is_finite() && f >= 0.0).then(|| f.trunc() as u64)
}

#[cfg(test)]
mod tests;
