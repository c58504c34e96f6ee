//! Backoff policy for retrying LLM calls (`LLM_MAX_RETRIES`, docs/configuration.md).
//!
//! Exponential backoff with "equal jitter": the n-th retry waits between half and all of
//! `min(cap, base · 2ⁿ)`, so concurrent runs that failed together do not retry in lockstep, and a
//! retry never fires immediately. A provider's `Retry-After` (seconds or HTTP-date) wins over the
//! computed delay because the provider knows when it will accept us again, but it is capped so a
//! hostile or buggy header cannot park a run for hours. *What* is retried is decided by
//! [`LlmError::is_retryable`](super::LlmError::is_retryable); this module only says *when*.

use std::time::{Duration, SystemTime};

use rand::Rng;

/// How long to wait between attempts. `base` is configurable so tests run in milliseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Backoff {
    /// Delay scale of the first retry.
    pub base: Duration,
    /// Upper bound of the computed (exponential) delay.
    pub cap: Duration,
    /// Upper bound applied to a provider's `Retry-After`.
    pub max_retry_after: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Self {
            base: Duration::from_millis(250),
            cap: Duration::from_secs(8),
            max_retry_after: Duration::from_secs(60),
        }
    }
}

impl Backoff {
    /// A policy with the given base and the default caps.
    pub fn with_base(base: Duration) -> Self {
        Self {
            base,
            ..Self::default()
        }
    }

    /// The un-jittered delay before retry number `retry` (0 for the first retry).
    pub fn exponential(&self, retry: u32) -> Duration {
        let factor = 2u32.saturating_pow(retry.min(31));
        self.base.saturating_mul(factor).min(self.cap)
    }

    /// The delay before retry number `retry`: the provider's `Retry-After` when given (capped),
    /// else the exponential delay with equal jitter.
    pub fn delay(&self, retry: u32, retry_after: Option<Duration>) -> Duration {
        let full = self.exponential(retry);
        let half = full / 2;
        if let Some(after) = retry_after {
            // `Retry-After: 0` (or a date in the past) still waits the shortest computed delay.
            return after.min(self.max_retry_after).max(half);
        }
        let spread = u64::try_from((full - half).as_micros()).unwrap_or(u64::MAX);
        let jitter = if spread == 0 {
            0
        } else {
            rand::rng().random_range(0..=spread)
        };
        half + Duration::from_micros(jitter)
    }
}

/// Parses a `Retry-After` header value: delta-seconds (`"3"`, also a fractional `"1.5"` that some
/// proxies send) or an HTTP-date (`"Wed, 21 Oct 2015 07:28:00 GMT"`), relative to `now`. A date in
/// the past means "now" (zero). Anything else is ignored (`None`).
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    if let Ok(secs) = value.parse::<f64>() {
        return Duration::try_from_secs_f64(secs).ok();
    }
    let date = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    let at = SystemTime::from(date.with_timezone(&chrono::Utc));
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests;
