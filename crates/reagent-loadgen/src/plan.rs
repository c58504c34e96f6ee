//! What one conversation of a load does and what it measured, shared by the one-instance
//! client (`conv`), the several-instances client (`multi`) and the side requests (`side`).

use std::sync::Arc;
use std::time::Duration;

use crate::targets::Targets;
use crate::verify::Expect;

/// What to do in one conversation.
#[derive(Clone, Debug)]
pub struct ConvPlan {
    /// `native`, `json` or `auto`.
    pub mode: &'static str,
    /// The run's engine; the server's default when `None`.
    pub engine: Option<String>,
    /// The agent to run; the server's default when `None`.
    pub agent: Option<String>,
    /// Send one interrupt after the first `step` event.
    pub interrupt: bool,
    /// Cancel after the first `step` event (or `start` if the run has no steps).
    pub cancel: bool,
    /// Extra acceptable final statuses (e.g. `failed` under injected faults).
    pub also_ok: Vec<&'static str>,
    pub timeout: Duration,
    /// Several instances (`--urls`): the conversation goes through [`crate::multi`].
    pub targets: Option<Arc<Targets>>,
}

/// What one conversation measured.
#[derive(Debug, Default)]
pub struct ConvResult {
    pub run_id: Option<String>,
    pub status: Option<String>,
    pub errors: Vec<String>,
    /// Request sent → first event.
    pub ttfe_ms: Option<f64>,
    /// Request sent → `done`.
    pub run_ms: Option<f64>,
    /// Per stamped token: (the mock's send stamp in µs since the epoch, stamp → SSE event
    /// received in ms).
    pub tokens: Vec<(u64, f64)>,
    /// Request sent → first `answer` delta.
    pub first_delta_ms: Option<f64>,
    /// `done.usage`: the run's LLM calls and completion tokens, and `done.synthesis`.
    pub llm_calls: Option<u64>,
    pub completion_tokens: Option<u64>,
    pub synthesis: Option<bool>,
    /// Arrival of each `tool_end`, relative to the request.
    pub tool_end_ms: Vec<f64>,
    pub interrupts_accepted: usize,
    /// Of those, the ones that became the query of the next run (deleted as interrupts then).
    pub interrupts_moved: usize,
    pub cancel_accepted: bool,
    /// Streams broken and resumed with `Last-Event-ID` on another instance.
    pub reconnects: usize,
    /// `step {type:"resumed"}` events, and when each arrived (ms since the request).
    pub resumed: usize,
    pub resumed_at_ms: Vec<f64>,
}

/// What the side requests (interrupt, cancel) of one conversation did.
#[derive(Default)]
pub struct Side {
    pub interrupts: Vec<String>,
    /// Accepted with `next_run: true`: the query of the run that follows (docs/api.md).
    pub next_run: Vec<String>,
    pub cancel_accepted: bool,
    pub errors: Vec<String>,
    /// Through which instance each side request was accepted (several instances).
    pub notes: Vec<String>,
}

impl Side {
    /// What the accepted side requests mean for the run's result and its stream; returns the
    /// notes of where they were sent.
    pub fn accepted(self, out: &mut ConvResult, expect: &mut Expect) -> Vec<String> {
        out.errors.extend(self.errors);
        out.interrupts_accepted = self.interrupts.len() + self.next_run.len();
        expect.interrupts = self.interrupts;
        expect.next_run = self.next_run;
        if self.cancel_accepted {
            out.cancel_accepted = true;
            // A cancel accepted while the run was finishing may still see it complete.
            expect.statuses.push("cancelled");
        }
        self.notes
    }
}
