//! After the loop: the answer, then `done`. Which answer follows the model's `synthesis`
//! policy (docs/configuration.md): the loop's reply when it passed the answer checks (`auto`,
//! `never`; it streamed already), a synthesis call (`always`, or `auto` when no reply passed),
//! or a text built from the tool results (`never`). A failed or stopped run ends on its
//! explanation, or, stopped while its answer streamed, on exactly what was streamed.

use std::time::Instant;

use super::ReActAgent;
use crate::agent::answer::{AnswerStream, LoopAnswer};
use crate::agent::events::{AgentEvent, AnswerSource, EventSink, RunOutcome, RunStatus};
use crate::agent::run::{AgentResult, RunHandles, RunInput};
use crate::agent::synthesis::{
    clean_draft, fallback_answer, observation_answer, stream_answer, trace_limit, AnswerSoFar,
    Synthesis, TraceLimits,
};
use crate::llm::{SynthesisPolicy, Usage};

/// What a run is told when its model's reply was empty and nothing else could answer.
const EMPTY_ANSWER: &str =
    "Sorry, I could not write an answer: the model's reply was empty and no tool returned a \
     result to answer from.";

impl ReActAgent {
    /// After the loop: the answer (as above) and `done`.
    pub(super) async fn conclude(
        &self,
        mut result: AgentResult,
        input: &RunInput,
        handles: &RunHandles,
        started: Instant,
    ) -> AgentResult {
        let events = handles.events.clone();
        let loop_answer = result.loop_answer.take();
        // Waiting for the caller: no answer, just `done` with the calls.
        if result.outcome.status == RunStatus::RequiresAction {
            result.outcome.answer = String::new();
            result.outcome.elapsed_ms = started.elapsed().as_millis() as u64;
            events.send(AgentEvent::Done(result.outcome.clone()));
            return result;
        }
        if !matches!(
            result.outcome.status,
            RunStatus::Completed | RunStatus::MaxIterations | RunStatus::BudgetExceeded
        ) {
            ended_early(&mut result.outcome, loop_answer, &events);
            result.outcome.elapsed_ms = started.elapsed().as_millis() as u64;
            events.send(AgentEvent::Done(result.outcome.clone()));
            return result;
        }
        if result.brief_answer.trim().is_empty() {
            result.brief_answer =
                observation_answer(&result.steps).unwrap_or_else(|| EMPTY_ANSWER.to_string());
        }
        let s = match (self.llm.synthesis(), loop_answer) {
            (_, Some(mut la)) if la.accepted.is_some() => {
                let text = la.accepted.take().unwrap_or_default();
                la.stream.finish(AnswerSource::Reply, &text, false);
                Synthesis {
                    answer: text,
                    fallback: false,
                    usage: Usage::default(),
                    continuity: la.continuity,
                }
            }
            (SynthesisPolicy::Never, la) => {
                let la = la.unwrap_or_else(|| LoopAnswer {
                    stream: AnswerStream::new(events.clone()),
                    accepted: None,
                    continuity: None,
                    brief_is_reply: false,
                });
                from_results(&result, la)
            }
            (_, la) => {
                if let Some(mut la) = la {
                    la.stream.reset();
                }
                self.synthesise(&result, input, handles).await
            }
        };
        let outcome = &mut result.outcome;
        if handles.cancel.is_cancelled() && s.fallback {
            outcome.status = RunStatus::Cancelled;
        } else if s.fallback && s.answer == EMPTY_ANSWER {
            outcome.status = RunStatus::Failed;
            outcome.error = Some(
                "the model's reply was empty and no synthesised answer replaced it".to_string(),
            );
        }
        outcome.usage += s.usage;
        outcome.synthesis = s.usage.llm_calls > 0;
        outcome.answer = s.answer;
        outcome.elapsed_ms = started.elapsed().as_millis() as u64;
        result.answer_fallback = s.fallback;
        result.answer_continuity = s.continuity;
        events.send(AgentEvent::Done(result.outcome.clone()));
        result
    }

    /// The synthesis call over the run's trace (`stream_answer`).
    async fn synthesise(
        &self,
        result: &AgentResult,
        input: &RunInput,
        handles: &RunHandles,
    ) -> Synthesis {
        let limits = TraceLimits {
            truncation: self.config.synthesis_truncation,
            max_bytes: trace_limit(self.config.synthesis_max_bytes, self.context_budget()),
        };
        stream_answer(
            self.llm.as_ref(),
            &input.query,
            &result.steps,
            &result.brief_answer,
            limits,
            &handles.events,
            &handles.cancel,
        )
        .await
    }
}

/// A failed or stopped run's answer events (`done` follows). Stopped while its answer
/// streamed, the answer is exactly what was streamed; otherwise its explanation
/// (`outcome.answer`), after a `reset` of any text shown.
fn ended_early(outcome: &mut RunOutcome, loop_answer: Option<LoopAnswer>, events: &EventSink) {
    let so_far = match loop_answer {
        None => AnswerSoFar::NotStarted,
        Some(mut la) => {
            let shown = la.stream.streamed().to_string();
            if outcome.status == RunStatus::Cancelled && !shown.is_empty() {
                la.stream.finish(AnswerSource::Reply, &shown, true);
                outcome.answer = shown;
                return;
            }
            la.stream.so_far()
        }
    };
    for e in fallback_answer(&outcome.answer, so_far) {
        events.send(AgentEvent::Answer(e));
    }
}

/// `synthesis = "never"` when no reply passed: the loop's reply where it is an answer at all
/// (a call written as text is replaced by the tool results), else the brief built from the
/// results.
fn from_results(result: &AgentResult, mut la: LoopAnswer) -> Synthesis {
    let text = clean_draft(&result.brief_answer, &result.steps);
    let source = if la.brief_is_reply && text == result.brief_answer {
        AnswerSource::Reply
    } else {
        AnswerSource::Results
    };
    la.stream.finish(source, &text, true);
    Synthesis {
        answer: text,
        fallback: true,
        usage: Usage::default(),
        continuity: None,
    }
}
