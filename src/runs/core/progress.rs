//! A run's counters as its events show them. The stored row gets its counters when the run
//! ends, so `GET /api/runs/{id}` of a live run, and the final state of a run recovered after a
//! crash, take them from the events instead of showing zeros.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use crate::agent::events::{AgentEvent, StepEvent};
use crate::agent::synthesis::AnswerSoFar;
use crate::store::{RunRow, StoredEvent};

/// Iterations reached and tool calls started so far.
#[derive(Debug, Default)]
pub struct Progress {
    iterations: AtomicU32,
    tool_calls: AtomicU32,
    /// An `answer` event was emitted: a fallback answer must `reset` it.
    answering: AtomicBool,
}

impl Progress {
    /// Counts one event of the run (called in the emitting task; two atomic updates at most).
    pub fn observe(&self, event: &AgentEvent) {
        let AgentEvent::Step(step) = event else {
            if matches!(event, AgentEvent::Answer(_)) {
                self.answering.store(true, Ordering::Relaxed);
            }
            return;
        };
        if let Some(i) = iteration(step) {
            self.iterations.fetch_max(i, Ordering::Relaxed);
        }
        if matches!(step, StepEvent::ToolStart { .. }) {
            self.tool_calls.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The counters of a stored log (events that do not parse are skipped).
    pub fn of_stored(events: &[StoredEvent]) -> Self {
        let progress = Self::default();
        for e in events {
            if let Ok(event) = AgentEvent::from_parts(&e.name, &e.data) {
                progress.observe(&event);
            }
        }
        progress
    }

    pub fn iterations(&self) -> u32 {
        self.iterations.load(Ordering::Relaxed)
    }

    pub fn tool_calls(&self) -> u32 {
        self.tool_calls.load(Ordering::Relaxed)
    }

    /// How much of an answer clients have seen, for a fallback answer that replaces it.
    pub fn answer_so_far(&self) -> AnswerSoFar {
        if self.answering.load(Ordering::Relaxed) {
            AnswerSoFar::Partial
        } else {
            AnswerSoFar::NotStarted
        }
    }

    /// Raises a row's counters to what the events show (never lowers them).
    pub fn apply(&self, row: &mut RunRow) {
        row.iterations = row.iterations.max(self.iterations());
        row.tool_calls = row.tool_calls.max(self.tool_calls());
    }
}

fn iteration(step: &StepEvent) -> Option<u32> {
    match step {
        StepEvent::Thinking { iteration, .. }
        | StepEvent::ToolStart { iteration, .. }
        | StepEvent::ToolEnd { iteration, .. }
        | StepEvent::Interrupt { iteration, .. }
        | StepEvent::ApprovalRequired { iteration, .. } => Some(*iteration),
        _ => None,
    }
}
