//! How a run ends outside the happy path (a panic, a write that cannot be stored, a budget
//! refusal) and what its end leaves behind (the log line, the trace span).

use crate::agent::synthesis::{fallback_tail, AnswerSoFar};
use crate::agent::{EventSink, Mode, RunOutcome};
use crate::domain::RunStatus;
use crate::llm::traced::tokens;
use crate::runs::core::manager::LiveRun;
use crate::runs::core::persist::Broken;
use crate::telemetry::spans::RunEnd;
use crate::telemetry::RunTrace;

/// What a client reads when the engine panicked.
const PANIC_ANSWER: &str = "Sorry, the run failed because of an internal error.";

/// What a client reads when the run's progress could not be stored.
const STORAGE_ANSWER: &str =
    "Sorry, the run was stopped: its progress could not be saved (the database cannot write).";

/// Ends a run the writer could not store (see [`Broken`]): failed, saying why, with the
/// fallback answer after whatever of an answer clients saw.
pub(super) fn end_unstored(live: &LiveRun, sink: &EventSink, broken: &Broken) {
    let reason = broken.reason().unwrap_or("the database cannot write");
    tracing::error!(run_id = %live.id, error = %reason, "ending the run: its progress cannot be stored");
    let mut outcome = RunOutcome::failed(
        Mode::Json,
        STORAGE_ANSWER,
        format!("the run's progress could not be stored: {reason}"),
    );
    outcome.iterations = live.progress.iterations();
    outcome.tool_calls = live.progress.tool_calls();
    for ev in fallback_tail(outcome, live.progress.answer_so_far()) {
        sink.send(ev);
    }
}

/// Ends a run whose engine panicked: failed, "internal error".
pub(super) fn end_panicked(sink: &EventSink, panic: &(dyn std::any::Any + Send)) {
    let msg = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_default();
    tracing::error!(panic = %msg, "the agent panicked");
    let outcome = RunOutcome::failed(Mode::Json, PANIC_ANSWER, "internal error");
    for ev in fallback_tail(outcome, AnswerSoFar::NotStarted) {
        sink.send(ev);
    }
}

/// The run's one line (docs/deployment.md, "Logs"): who ran what, how it ended, what it cost.
pub(super) fn log_finished(live: &LiveRun, agent: &str, model: &str, d: &RunOutcome) {
    tracing::info!(
        run_id = %live.id,
        conversation_id = %live.conversation_id,
        agent = %agent,
        model = %model,
        status = %d.status.as_str(),
        iterations = d.iterations,
        tool_calls = d.tool_calls,
        prompt_tokens = d.usage.prompt_tokens,
        completion_tokens = d.usage.completion_tokens,
        total_tokens = d.usage.total_tokens,
        llm_calls = d.usage.llm_calls,
        duration_ms = d.elapsed_ms,
        trace_id = %d.trace_id.as_deref().unwrap_or("-"),
        "run finished"
    );
}

/// Ends the run's span with its outcome.
pub(super) fn finish_trace(trace: &RunTrace, d: &RunOutcome) {
    trace.finish(&RunEnd {
        status: d.status.as_str(),
        error: d.error.as_deref(),
        tokens: tokens(&d.usage),
        iterations: d.iterations,
        tool_calls: d.tool_calls,
    });
}

/// A run the budget refused a call of ends `budget_exceeded` whatever its engine made of the
/// refusal (a DAG step, the planner, the router), unless it was cancelled.
pub(super) fn out_of_budget(outcome: &mut RunOutcome, refused: bool) {
    if !refused
        || matches!(
            outcome.status,
            RunStatus::Cancelled | RunStatus::BudgetExceeded
        )
    {
        return;
    }
    outcome.status = RunStatus::BudgetExceeded;
    if outcome.error.is_none() {
        outcome.error = Some("budget exceeded: a call did not fit the tenant's budget".into());
    }
}
