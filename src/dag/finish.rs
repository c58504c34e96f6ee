//! The end of a DAG run: the queue closes (what it still holds is reported unprocessed), the
//! outcome is settled — failed when no step of any round completed, cancelled when the user
//! stopped it — and the answer streams: synthesis for a completed run, the fallback text
//! otherwise or when synthesis fails, then `done` with the DAG summary.
//!
//! A DAG run's answer combines several steps' results, which no single reply of a step can
//! be: `synthesis = "auto"` synthesises as `"always"` does, and `"never"` answers with the
//! completed steps' results (the fallback text) without a call.

use std::time::Instant;

use super::answer::{fallback_text, trace, Round};
use super::setup::DagSetup;
use crate::agent::answer::AnswerStream;
use crate::agent::events::{AnswerSource, DagStatus, DagSummary};
use crate::agent::synthesis::{
    cut_bytes, fallback_tail, stream_synthesis, trace_limit, AnswerSoFar, CANCELLED_ANSWER,
};
use crate::agent::{
    AgentEvent, AgentResult, Interrupt, RunHandles, RunInput, RunOutcome, RunStatus,
};
use crate::domain::Engine;
use crate::llm::{SynthesisPolicy, Usage};

/// A DAG run's result: what the run manager needs (as for ReAct) and every round.
pub struct DagResult {
    pub result: AgentResult,
    pub rounds: Vec<Round>,
}

/// The rounds' running totals.
#[derive(Default)]
pub(super) struct Totals {
    pub usage: Usage,
    pub iterations: u32,
    pub tool_calls: u32,
    pub rounds: Vec<Round>,
    pub follow_ups: Vec<String>,
    pub processed: Vec<Interrupt>,
    pub replans: u32,
    pub cancelled: bool,
}

/// Ends the run: the outcome settled, the answer streamed, `done` sent.
pub(super) async fn finish(
    setup: &DagSetup,
    input: &RunInput,
    handles: &RunHandles,
    t: Totals,
    started: Instant,
) -> DagResult {
    let brief = fallback_text(&t.rounds, setup.react.synthesis_truncation);
    let mut outcome = settle(setup, handles, &t, &brief);
    let answer_fallback = answer(setup, input, handles, &t, &brief, &mut outcome, started).await;
    let steps = t
        .rounds
        .iter()
        .flat_map(|r| r.steps.iter())
        .filter_map(|s| s.run.as_ref())
        .flat_map(|r| r.steps.iter().cloned())
        .collect();
    DagResult {
        result: AgentResult {
            outcome,
            brief_answer: brief,
            answer_fallback,
            steps,
            messages: Vec::new(),
            processed_interrupts: t.processed,
            answer_continuity: None,
            loop_answer: None,
        },
        rounds: t.rounds,
    }
}

/// The outcome before the answer: status, counters, the DAG summary; the queue closes here.
fn settle(setup: &DagSetup, handles: &RunHandles, t: &Totals, brief: &str) -> RunOutcome {
    let unprocessed = handles.interrupts.close();
    let last = t.rounds.iter().rev().find_map(|r| r.analysis.clone());
    let completed = t.rounds.iter().any(|r| {
        r.steps
            .iter()
            .any(|s| s.status == Some(DagStatus::Completed))
    });
    let (status, error) = if t.cancelled || handles.cancel.is_cancelled() {
        (RunStatus::Cancelled, None)
    } else if !completed {
        (
            RunStatus::Failed,
            Some("no step of the plan completed".to_string()),
        )
    } else {
        (RunStatus::Completed, None)
    };
    let answer = match status {
        RunStatus::Cancelled => CANCELLED_ANSWER.to_string(),
        _ => brief.to_string(),
    };
    RunOutcome {
        status,
        iterations: t.iterations,
        tool_calls: t.tool_calls,
        usage: t.usage,
        elapsed_ms: 0,
        mode: setup.mode(),
        answer,
        synthesis: false,
        error,
        unprocessed_interrupts: unprocessed,
        next_run_id: None,
        dag: Some(DagSummary {
            engine: Engine::Dag,
            rounds: t.rounds.len() as u32,
            achieved: last.as_ref().is_some_and(|a| a.achieved),
            confidence: last.as_ref().map_or(0.0, |a| a.confidence),
        }),
        required_action: None,
        trace_id: None,
        trace_url: None,
    }
}

/// Streams the answer and sends `done`; true when the answer is the fallback text.
async fn answer(
    setup: &DagSetup,
    input: &RunInput,
    handles: &RunHandles,
    t: &Totals,
    brief: &str,
    outcome: &mut RunOutcome,
    started: Instant,
) -> bool {
    if outcome.status != RunStatus::Completed {
        outcome.elapsed_ms = started.elapsed().as_millis() as u64;
        for e in fallback_tail(outcome.clone(), AnswerSoFar::NotStarted) {
            handles.events.send(e);
        }
        return true;
    }
    if setup.llm.synthesis() == SynthesisPolicy::Never {
        outcome.elapsed_ms = started.elapsed().as_millis() as u64;
        let mut stream = AnswerStream::new(handles.events.clone());
        stream.finish(AnswerSource::Results, brief, true);
        handles.events.send(AgentEvent::Done(outcome.clone()));
        return true;
    }
    let react = &setup.react;
    let budget =
        react.context_budget_for(setup.llm.context_window(), setup.llm.max_output_tokens());
    let limit = trace_limit(react.synthesis_max_bytes, budget as usize);
    let user = cut_bytes(
        &trace(&input.query, &t.rounds, brief, react.synthesis_truncation),
        limit,
    );
    let s = stream_synthesis(
        setup.llm.as_ref(),
        user,
        brief,
        &handles.events,
        &handles.cancel,
    )
    .await;
    if handles.cancel.is_cancelled() && s.fallback {
        outcome.status = RunStatus::Cancelled;
    }
    outcome.usage += s.usage;
    outcome.synthesis = s.usage.llm_calls > 0;
    outcome.answer = s.answer;
    outcome.elapsed_ms = started.elapsed().as_millis() as u64;
    handles.events.send(AgentEvent::Done(outcome.clone()));
    s.fallback
}
