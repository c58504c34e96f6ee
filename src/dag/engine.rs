//! [`DagEngine`]: a run as rounds of plan → execute → analyse, then one streamed
//! answer. Emits `start` … `done` like [`ReActAgent`](crate::agent::ReActAgent), so the run
//! manager persists, replays and resumes a DAG run exactly as any other. The rounds: an
//! interrupt drained between phases re-plans without spending the `DAG_MAX_REPLANS` budget;
//! `DAG_MAX_ROUNDS` caps them all; interrupts left when the rounds end are reported in
//! `done.unprocessed_interrupts` (the server runs them next, docs/api.md).

use std::sync::Arc;
use std::time::Instant;

use super::analyse::{analyse, Analysis};
use super::answer::{goal, replan_context, Round};
use super::executor::{execute, RoundCtx};
use super::finish::{finish, DagResult, Totals};
use super::planner::{make_plan, PlanRequest};
use super::setup::DagSetup;
use super::step::{pick_model, CallIds};
use crate::agent::events::{PlanStepView, StartEvent, StepEvent};
use crate::agent::{AgentEvent, Mode, RunHandles, RunInput};
use crate::domain::Engine;
use crate::llm::Usage;
use crate::telemetry::spans::Child;

/// The DAG engine of one run.
pub struct DagEngine {
    setup: Arc<DagSetup>,
    usage_before: Usage,
}

impl DagEngine {
    pub fn new(setup: DagSetup) -> Self {
        Self {
            setup: Arc::new(setup),
            usage_before: Usage::default(),
        }
    }

    /// Counts calls made before the engine started (the `auto` routing call).
    pub fn with_usage_before(mut self, usage: Usage) -> Self {
        self.usage_before = usage;
        self
    }

    /// The mode the run's model works in (`start.mode`); steps on other models may differ.
    pub fn mode(&self) -> Mode {
        self.setup.mode()
    }

    /// Runs the query to completion, `start` to `done`. Never panics on LLM or tool failure.
    pub async fn run(&self, input: RunInput, handles: RunHandles) -> DagResult {
        let started = Instant::now();
        handles.events.send(AgentEvent::Start(StartEvent {
            run_id: input.run_id.clone(),
            conversation_id: input.conversation_id.clone(),
            model: self.setup.model_name.clone(),
            mode: self.mode(),
            engine: Engine::Dag,
            continues: None,
            trace_id: None,
        }));
        let mut t = Totals {
            usage: self.usage_before,
            ..Totals::default()
        };
        let ids = Arc::new(CallIds::default());
        let max_rounds = self.setup.dag.max_rounds;
        for number in 1..=max_rounds {
            if !self.round(number, &input, &handles, &ids, &mut t).await {
                break;
            }
        }
        finish(&self.setup, &input, &handles, t, started).await
    }

    /// One round; true when another round follows.
    async fn round(
        &self,
        number: u32,
        input: &RunInput,
        handles: &RunHandles,
        ids: &Arc<CallIds>,
        t: &mut Totals,
    ) -> bool {
        let s = &self.setup;
        let (events, cancel) = (&handles.events, &handles.cancel);
        let goal = goal(&input.query, &t.follow_ups);
        let roles = s.models.roles();
        let context = (!t.rounds.is_empty()).then(|| replan_context(&t.rounds));
        let req = PlanRequest {
            goal: &goal,
            history: &input.history,
            tools: &s.tools,
            roles: &roles,
            replan_context: context.as_deref(),
            max_steps: s.dag.max_steps,
        };
        let span = Child::start(format!("plan {}", s.llm.model()), "plan", Vec::new());
        let Some(planned) = span.scope(make_plan(s.llm.as_ref(), &req, cancel)).await else {
            span.end(Some("cancelled"));
            t.cancelled = true;
            return false;
        };
        span.end(None);
        t.usage += planned.usage;
        events.send(AgentEvent::Step(StepEvent::Plan {
            round: number,
            steps: self.views(&planned.plan),
        }));
        let more_rounds = number < s.dag.max_rounds;
        let ctx = RoundCtx {
            setup: s,
            round: number,
            goal: &goal,
            history: &input.history,
            run_id: &input.run_id,
            conversation_id: &input.conversation_id,
            events,
            ids,
            cancel,
            interrupts: &handles.interrupts,
            artifacts: &handles.artifacts,
            tool_slots: &handles.tool_slots,
            may_stop: more_rounds,
        };
        let run = execute(&ctx, &planned.plan).await;
        t.usage += run.usage;
        t.iterations += run.iterations;
        t.tool_calls += run.tool_calls;
        let mut round = Round {
            number,
            steps: run.steps,
            analysis: None,
            plan_fallback: planned.fallback,
        };
        if cancel.is_cancelled() {
            t.cancelled = true;
            t.rounds.push(round);
            return false;
        }
        if more_rounds && self.drain(handles, t) {
            t.rounds.push(round);
            return self.replan(events, number, "the user sent a new message");
        }
        let (analysis, usage) = analyse(s.llm.as_ref(), &goal, &round.steps, cancel).await;
        t.usage += usage;
        let Some(a) = analysis else {
            t.cancelled = true;
            t.rounds.push(round);
            return false;
        };
        self.announce(events, number, &a);
        round.analysis = Some(a.clone());
        t.rounds.push(round);
        self.decide(number, &a, handles, t)
    }

    /// After the analysis: stop, re-plan for the user's new message (free), or re-plan on the
    /// analysis (from the budget).
    fn decide(&self, number: u32, a: &Analysis, handles: &RunHandles, t: &mut Totals) -> bool {
        let d = &self.setup.dag;
        if a.achieved || number >= d.max_rounds {
            return false;
        }
        // Nothing completed and no verdict: the model is unusable, and another plan on it
        // would fail the same way (a follow-up still gets its round below).
        let nothing_done = t.rounds.last().is_none_or(|r| {
            r.steps
                .iter()
                .all(|s| s.status != Some(crate::agent::events::DagStatus::Completed))
        });
        let unusable = a.failed && nothing_done;
        if self.drain(handles, t) {
            return self.replan(&handles.events, number, "the user sent a new message");
        }
        if !unusable && a.confidence < d.replan_stop_confidence && t.replans < d.max_replans {
            t.replans += 1;
            let reason = if a.reasoning.is_empty() {
                "the goal was not achieved".to_string()
            } else {
                a.reasoning.clone()
            };
            return self.replan(&handles.events, number, &reason);
        }
        false
    }

    fn replan(&self, events: &crate::agent::EventSink, number: u32, reason: &str) -> bool {
        events.send(AgentEvent::Step(StepEvent::Replan {
            round: number + 1,
            reason: reason.to_string(),
        }));
        true
    }

    fn announce(&self, events: &crate::agent::EventSink, number: u32, a: &Analysis) {
        events.send(AgentEvent::Step(StepEvent::Analysis {
            round: number,
            achieved: a.achieved,
            confidence: a.confidence,
            reasoning: a.reasoning.clone(),
        }));
    }

    /// Drains pending interrupts into the goal (one `interrupt` event); true if there were any.
    fn drain(&self, handles: &RunHandles, t: &mut Totals) -> bool {
        let items = handles.interrupts.drain();
        if items.is_empty() {
            return false;
        }
        handles.events.send(AgentEvent::Step(StepEvent::Interrupt {
            iteration: t.iterations,
            ids: items.iter().map(|i| i.id.to_string()).collect(),
            contents: items.iter().map(|i| i.content.clone()).collect(),
        }));
        t.follow_ups.extend(items.iter().map(|i| i.content.clone()));
        t.processed.extend(items);
        true
    }

    fn views(&self, plan: &super::plan::Plan) -> Vec<PlanStepView> {
        plan.steps
            .iter()
            .map(|p| PlanStepView {
                id: p.id.clone(),
                task: p.task.clone(),
                dependencies: p.dependencies.clone(),
                tool_hint: p.tool_hint.clone(),
                model_hint: p.model_hint.clone(),
                model: pick_model(&self.setup, p.model_hint.as_deref()).0,
            })
            .collect()
    }
}
