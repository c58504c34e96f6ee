//! Deterministic safeguards that need no LLM call: cycle detection (SPEC §2.8) and the
//! self-reflection cadence (SPEC §2.7). The completion checklist (§2.9) is a single flag in the
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
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn third_identical_call_warns_and_repeats() {
        let mut d = CycleDetector::new(3);
        let a = json!({"x": 1, "y": [1, 2]});
        assert_eq!(d.record("t", &a, "r"), None);
        assert_eq!(d.record("t", &a, "r"), None);
        assert_eq!(d.record("t", &a, "r"), Some(3));
        assert_eq!(d.record("t", &a, "r"), Some(4));
    }

    #[test]
    fn key_order_does_not_matter_but_values_and_results_do() {
        let mut d = CycleDetector::new(3);
        let a: Value = serde_json::from_str(r#"{"a":1,"b":2}"#).unwrap();
        let b: Value = serde_json::from_str(r#"{ "b": 2, "a": 1 }"#).unwrap();
        d.record("t", &a, "r");
        d.record("t", &b, "r");
        assert_eq!(d.record("t", &a, "r"), Some(3));

        let mut d = CycleDetector::new(3);
        d.record("t", &json!({"a": 1}), "r");
        d.record("t", &json!({"a": 2}), "r");
        assert_eq!(d.record("t", &json!({"a": 3}), "r"), None);

        let mut d = CycleDetector::new(3);
        d.record("t", &a, "r1");
        d.record("t", &a, "r2");
        assert_eq!(d.record("t", &a, "r3"), None);
        assert_eq!(CycleDetector::new(0).record("t", &a, "r"), None);
    }

    #[test]
    fn reflection_every_interval() {
        let mut r = ReflectionCadence::new(6);
        let due: Vec<bool> = (0..12).map(|_| r.add(1)).collect();
        assert_eq!(due.iter().filter(|d| **d).count(), 2);
        assert!(due[5] && due[11]);
        let mut r = ReflectionCadence::new(6);
        assert!(!r.add(5));
        assert!(r.add(3)); // crossing 6 inside a parallel batch
        assert!(!r.add(3));
        assert!(r.add(1)); // 12
        assert!(!ReflectionCadence::new(0).add(100));
    }
}
