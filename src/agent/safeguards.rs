//! Deterministic safeguards that need no LLM call: cycle detection and the
//! self-reflection cadence. The completion checklist is a single flag in the
//! loop and lives there.

use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};

use serde_json::Value;

/// Canonical form of tool arguments: object keys sorted at every depth, no whitespace, so key
/// order and formatting never hide a repeated call. Sorted explicitly because a dependency may
/// switch `serde_json::Map` to insertion order.
pub fn canonical_arguments(args: &Value) -> String {
    let mut out = String::new();
    write_canonical(args, &mut out);
    out
}

fn write_canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                write_canonical(&map[k], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

fn hash_of<T: Hash + ?Sized>(v: &T) -> u64 {
    let mut h = DefaultHasher::new();
    v.hash(&mut h);
    h.finish()
}

#[derive(Clone, Copy)]
struct Streak {
    result: u64,
    count: u32,
}

/// Counts identical `(tool, canonical arguments)` executions whose results were identical.
/// A different result restarts the streak, so only a genuinely stuck loop is flagged.
pub struct CycleDetector {
    threshold: u32,
    streaks: HashMap<u64, Streak>,
}

impl CycleDetector {
    /// `threshold` 0 disables detection.
    pub fn new(threshold: u32) -> Self {
        Self {
            threshold,
            streaks: HashMap::new(),
        }
    }

    /// Records one execution; returns how many identical executions in a row there were when
    /// that reaches the threshold (the caller appends the warning).
    pub fn record(&mut self, tool: &str, args: &Value, result: &str) -> Option<u32> {
        if self.threshold == 0 {
            return None;
        }
        let key = hash_of(&(tool, canonical_arguments(args)));
        let result = hash_of(result);
        let streak = self
            .streaks
            .entry(key)
            .and_modify(|s| {
                if s.result == result {
                    s.count += 1;
                } else {
                    *s = Streak { result, count: 1 };
                }
            })
            .or_insert(Streak { result, count: 1 });
        (streak.count >= self.threshold).then_some(streak.count)
    }
}

/// Tracks real tool executions and says when a reflection is due: one message each time the
/// count crosses a multiple of the interval.
pub struct ReflectionCadence {
    interval: u32,
    executions: u32,
    next: u32,
}

impl ReflectionCadence {
    /// `interval` 0 disables reflection.
    pub fn new(interval: u32) -> Self {
        Self {
            interval,
            executions: 0,
            next: interval,
        }
    }

    /// Adds `n` executions; true when a reflection message is due now.
    pub fn add(&mut self, n: u32) -> bool {
        self.executions += n;
        if self.interval == 0 || self.executions < self.next {
            return false;
        }
        while self.next <= self.executions {
            self.next += self.interval;
        }
        true
    }

    pub fn executions(&self) -> u32 {
        self.executions
    }
}

#[cfg(test)]
mod tests;
