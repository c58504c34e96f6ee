//! Which kind of model call a `chat` span records (`reagent.call_kind`: the GenAI conventions
//! have no such attribute, so it is reagent's own): the call site names its kind with
//! [`with_call_kind`], which puts it in the OpenTelemetry context the call runs in, and the
//! span reads it from there. A generic kind (`loop`, `structured`) never hides a more specific
//! one set further out, so a DAG step's loop calls say `dag_step` and a plan's structured call
//! says `planner`.

use std::future::Future;

use opentelemetry::context::FutureExt as _;
use opentelemetry::Context;

/// The attribute on `chat` spans.
pub const CALL_KIND: &str = "reagent.call_kind";

/// The kinds of model calls a run makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallKind {
    /// A ReAct loop iteration.
    Loop,
    /// The loop call right after the self-reflection prompt.
    Reflection,
    /// The loop call right after the completion checklist.
    CompletionCheck,
    /// The streamed answer synthesis.
    Synthesis,
    /// A history summary (context compaction).
    Compaction,
    /// Tool selection before the loop.
    Selection,
    /// The engine router (ReAct or DAG).
    Routing,
    /// A DAG plan (or re-plan).
    Planner,
    /// A DAG round's result analysis.
    Analysis,
    /// A call of a DAG step's own loop.
    DagStep,
    /// Any other schema-constrained call.
    Structured,
}

impl CallKind {
    pub fn as_str(self) -> &'static str {
        match self {
            CallKind::Loop => "loop",
            CallKind::Reflection => "reflection",
            CallKind::CompletionCheck => "completion_check",
            CallKind::Synthesis => "synthesis",
            CallKind::Compaction => "compaction",
            CallKind::Selection => "selection",
            CallKind::Routing => "routing",
            CallKind::Planner => "planner",
            CallKind::Analysis => "analysis",
            CallKind::DagStep => "dag_step",
            CallKind::Structured => "structured",
        }
    }

    fn generic(self) -> bool {
        matches!(self, CallKind::Loop | CallKind::Structured)
    }
}

/// The kind of the calls made in the current context, if a call site named one.
pub fn current() -> Option<CallKind> {
    Context::map_current(|cx| cx.get::<CallKind>().copied())
}

/// Runs `fut` with its model calls labelled `kind` (nothing to do while tracing is off).
pub async fn with_call_kind<F: Future>(kind: CallKind, fut: F) -> F::Output {
    if !super::enabled() || (kind.generic() && current().is_some()) {
        return fut.await;
    }
    fut.with_context(Context::current_with_value(kind)).await
}
