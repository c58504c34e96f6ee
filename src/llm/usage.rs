//! Token usage: the counters a run sums ([`Usage`]) and the provider's `usage` object as read
//! from the wire ([`WireUsage`]). Usage is accounting, not content: a provider that sends a
//! float, a string, a negative number or nonsense costs the count (read as absent), never the
//! reply and its tool calls. Sums saturate at [`MAX_COUNT`], which both databases can store,
//! so a run's usage in its `done` event is the one `GET /api/runs` reads back.

use std::ops::{Add, AddAssign};

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

/// The largest count kept: `i64::MAX`, the largest `BIGINT` (PostgreSQL) and `INTEGER` (SQLite).
pub const MAX_COUNT: u64 = i64::MAX.unsigned_abs();

fn sum(a: u64, b: u64) -> u64 {
    a.saturating_add(b).min(MAX_COUNT)
}

/// Token usage. `llm_calls` counts calls so that sums over a run say how many calls were made.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub total_tokens: u64,
    pub llm_calls: u64,
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
        }
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
        }
    }
}

impl AddAssign for Usage {
    fn add_assign(&mut self, o: Usage) {
        *self = *self + o;
    }
}

/// Token counts as providers send them: any field may be missing or malformed, the object may
/// be empty or not an object at all. Never fails to deserialize.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct WireUsage {
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
}

impl<'de> Deserialize<'de> for WireUsage {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(d)?;
        Ok(Self {
            prompt_tokens: value.get("prompt_tokens").and_then(count),
            completion_tokens: value.get("completion_tokens").and_then(count),
        })
    }
}

impl WireUsage {
    /// The usage of one call; `llm_calls` is 1 whatever the provider reported.
    pub fn to_usage(usage: Option<&WireUsage>) -> Usage {
        let (p, c) = usage.map_or((0, 0), |u| {
            (
                u.prompt_tokens.unwrap_or(0),
                u.completion_tokens.unwrap_or(0),
            )
        });
        Usage::call(p, c)
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
