//! Deterministic safeguards that need no LLM call: cycle detection, the repeat rule's memory of
//! the last execution and the self-reflection cadence. The completion checklist is a single
//! flag in the loop and lives there.

use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, HashSet};
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

/// What makes two calls the same call: the tool and its canonical arguments.
pub fn call_key(tool: &str, args: &Value) -> u64 {
    hash_of(&(tool, canonical_arguments(args)))
}

#[derive(Clone, Copy)]
struct Streak {
    result: u64,
    count: u32,
}

/// What a recorded call says about the run, when it says something.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cycle {
    /// This call and its result, identical, this many times.
    SameResult(u32),
    /// This call, identical, this many times in a row, whatever its results.
    Repeated(u32),
}

/// How many more identical calls in a row the repeat rule wants than the exact rule wants
/// identical results. Results that differ are weaker evidence of a stuck loop (the clock's
/// answer changes every second, a job's status may really be moving), so the rule waits two
/// calls longer: with the default threshold 3, the fifth `current_time("Asia/Tokyo")` in a row
/// warns — issue 45's model made six — while a status checked four times straight does not.
pub const REPEAT_MARGIN: u32 = 2;

/// Two rules over `(tool, canonical arguments)`:
/// - identical results: counted per call wherever it occurs; a different result restarts the
///   streak, so only a genuinely stuck loop is flagged (at `threshold`);
/// - identical calls in a row, whatever their results (at `threshold` + [`REPEAT_MARGIN`]).
///
/// Legitimate polling is not flagged: a poll whose arguments move on (a cursor, a page, a
/// `since`) is a different call each time, and a poll between other calls is not "in a row".
/// Only the same call, nothing else in between, [`REPEAT_MARGIN`] times past the threshold is.
pub struct CycleDetector {
    threshold: u32,
    streaks: HashMap<u64, Streak>,
    /// The last call's key and how many times in a row it was made.
    last: Option<(u64, u32)>,
}

impl CycleDetector {
    /// `threshold` 0 disables detection.
    pub fn new(threshold: u32) -> Self {
        Self {
            threshold,
            streaks: HashMap::new(),
            last: None,
        }
    }

    /// Records one call; returns what it completes when a rule fires (the caller appends the
    /// warning).
    pub fn record(&mut self, tool: &str, args: &Value, result: &str) -> Option<Cycle> {
        if self.threshold == 0 {
            return None;
        }
        let key = call_key(tool, args);
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
        let same = streak.count;
        let in_row = match self.last {
            Some((k, n)) if k == key => n + 1,
            _ => 1,
        };
        self.last = Some((key, in_row));
        if same >= self.threshold {
            Some(Cycle::SameResult(same))
        } else {
            (in_row >= self.threshold + REPEAT_MARGIN).then_some(Cycle::Repeated(in_row))
        }
    }
}

impl CycleDetector {
    /// The call has returned the same result more than `threshold` times: past the warning,
    /// which the exact rule gives at `threshold`. Never with detection disabled.
    pub fn stuck(&self, tool: &str, args: &Value) -> bool {
        let key = call_key(tool, args);
        self.threshold > 0
            && self
                .streaks
                .get(&key)
                .is_some_and(|s| s.count > self.threshold)
    }
}

/// The run's most recent execution, for the repeat rule: the last call, in call order, of the
/// last reply that ran any, with its result. A reply whose first call repeats it runs that call
/// alone, and ends the loop when the result is the same again.
#[derive(Default)]
pub struct LastExecution(Option<(u64, u64)>);

impl LastExecution {
    /// The calls `(tool, arguments, result)` of one batch that ran (or were answered with the
    /// result of an identical one), in call order; a batch where none ran leaves it in place.
    pub fn record<'a>(&mut self, calls: impl Iterator<Item = (&'a str, &'a Value, &'a str)>) {
        if let Some((tool, args, result)) = calls.last() {
            self.0 = Some((call_key(tool, args), hash_of(result)));
        }
    }

    /// `tool` with `args` is the most recent execution's call.
    pub fn repeats(&self, tool: &str, args: &Value) -> bool {
        self.0.is_some_and(|(key, _)| key == call_key(tool, args))
    }

    /// `result` is the most recent execution's result.
    pub fn same_result(&self, result: &str) -> bool {
        self.0.is_some_and(|(_, r)| r == hash_of(result))
    }
}

/// Tracks real tool executions and says when a reflection is due: one message each time the
/// number of distinct calls executed (tool and canonical arguments; a call made again adds
/// nothing) crosses a multiple of the interval. A small model that repeats one call does not
/// earn reflections by it, as a model that does six different things does.
pub struct ReflectionCadence {
    interval: u32,
    /// Every real execution (the completion checklist's count).
    executions: u32,
    seen: HashSet<u64>,
    next: u32,
}

impl ReflectionCadence {
    /// `interval` 0 disables reflection.
    pub fn new(interval: u32) -> Self {
        Self {
            interval,
            executions: 0,
            seen: HashSet::new(),
            next: interval,
        }
    }

    /// Records one execution of `tool` with `args`.
    pub fn record(&mut self, tool: &str, args: &Value) {
        self.executions += 1;
        self.seen.insert(call_key(tool, args));
    }

    /// True when a reflection message is due now (asked once after each batch of results).
    pub fn due(&mut self) -> bool {
        let distinct = self.seen.len() as u32;
        if self.interval == 0 || distinct < self.next {
            return false;
        }
        while self.next <= distinct {
            self.next += self.interval;
        }
        true
    }

    /// The state of a resumed run: its count of executions and the calls its steps made.
    pub fn restore<'s>(
        &mut self,
        executions: u32,
        calls: impl Iterator<Item = (&'s str, &'s Value)>,
    ) {
        for (tool, args) in calls {
            self.seen.insert(call_key(tool, args));
        }
        self.due();
        self.executions = executions;
    }

    pub fn executions(&self) -> u32 {
        self.executions
    }
}

#[cfg(test)]
mod tests;
