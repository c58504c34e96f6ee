//! The end of a DAG run: the queue closes (what it still holds is reported unprocessed), the
//! outcome is settled — failed when no step of any round completed, cancelled when the user
//! stopped it — and the answer streams: synthesis for a completed run, the fallback text
//! otherwise or when synthesis fails, then `done` with the DAG summary.

use std::time::Instant;

use super::answer::{fallback_text, trace};
use super::engine::{DagEngine, DagResult, Totals};
use crate::agent::events::{DagStatus, DagSummary};
use crate::agent::synthesis::{fallback_tail, stream_synthesis, AnswerSoFar};
use crate::agent::{AgentEvent, AgentResult, RunHandles, RunInput, RunOutcome, RunStatus};
use crate::domain::Engine;

/// The answer a cancelled run ends with (as a cancelled ReAct run).
const CANCELLED_ANSWER: &str = "The run was cancelled before it finished.";

impl DagEngine {
    pub(super) async fn finish(
        &self,
        input: &RunInput,
        handles: &RunHandles,
        t: Totals,
        started: Instant,
    ) -> DagResult {
        let brief = fallback_text(&t.rounds, self.setup().react.synthesis_truncation);
        let mut outcome = self.settle(handles, &t, &brief);
        let answer_fallback = self
            .answer(input, handles, &t, &brief, &mut outcome, started)
            .await;
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
            },
            rounds: t.rounds,
        }
    }

    /// The outcome before the answer: status, counters, the DAG summary; the queue closes here.
    fn settle(&self, handles: &RunHandles, t: &Totals, brief: &str) -> RunOutcome {
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
            mode: self.mode(),
            answer,
            error,
            unprocessed_interrupts: unprocessed,
            next_run_id: None,
            dag: Some(DagSummary {
                engine: Engine::Dag,
                rounds: t.rounds.len() as u32,
                achieved: last.as_ref().is_some_and(|a| a.achieved),
                confidence: last.as_ref().map_or(0.0, |a| a.confidence),
            }),
        }
    }

    /// Streams the answer and sends `done`; true when the answer is the fallback text.
    async fn answer(
        &self,
        input: &RunInput,
        handles: &RunHandles,
        t: &Totals,
        brief: &str,
        outcome: &mut RunOutcome,
        started: Instant,
    ) -> bool {
        let setup = self.setup();
        if outcome.status != RunStatus::Completed {
            outcome.elapsed_ms = started.elapsed().as_millis() as u64;
            for e in fallback_tail(outcome.clone(), AnswerSoFar::NotStarted) {
                handles.events.send(e);
            }
            return true;
        }
        let user = trace(
            &input.query,
            &t.rounds,
            brief,
            setup.react.synthesis_truncation,
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
        outcome.answer = s.answer;
        outcome.elapsed_ms = started.elapsed().as_millis() as u64;
        handles.events.send(AgentEvent::Done(outcome.clone()));
        s.fallback
    }
}
