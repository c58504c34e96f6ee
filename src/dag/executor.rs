//! The executor: runs one plan. A step is ready when all its dependencies
//! completed; ready steps are `queued` until one of `DAG_MAX_CONCURRENCY` semaphore permits is
//! free, then `running` (their timeout and model start there). A step whose dependency failed
//! (or was skipped) fails with `dependency <id> failed` without running. A pending interrupt, or
//! a cancel, stops the round: steps not yet running are `skipped`, running steps finish (a
//! cancel makes them finish at their next await point).

use std::collections::HashMap;
use std::sync::Arc;

use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::plan::{Plan, PlanStep};
use super::setup::DagSetup;
use super::step::{pick_model, run_step, step_query, CallIds, DepResult, StepJob, StepRun};
use crate::agent::artifacts::ArtifactSink;
use crate::agent::events::{DagStatus, StepEvent};
use crate::agent::synthesis::truncate_chars;
use crate::agent::{AgentEvent, AgentResult, EventSink, InterruptQueue, RunStatus, ToolSlots};
use crate::llm::{Message, Usage};
use crate::telemetry::spans::Child;

/// Characters of a step's result a `dag_step` event shows.
const DISPLAY_RESULT_CHARS: usize = 4000;

/// A step's state in its round; `status` is `None` while it waits for its dependencies.
#[derive(Clone, Debug)]
pub struct StepState {
    pub step: PlanStep,
    pub model: String,
    pub status: Option<DagStatus>,
    pub result: Option<String>,
    pub error: Option<String>,
    pub duration_ms: Option<u64>,
    /// The step's loop (records, messages), once it ran.
    pub run: Option<AgentResult>,
}

/// What a round's execution did.
pub struct RoundRun {
    pub steps: Vec<StepState>,
    pub usage: Usage,
    pub iterations: u32,
    pub tool_calls: u32,
}

/// The run-wide handles one round needs.
pub struct RoundCtx<'a> {
    pub setup: &'a Arc<DagSetup>,
    pub round: u32,
    pub goal: &'a str,
    pub history: &'a [Message],
    pub run_id: &'a str,
    pub conversation_id: &'a str,
    pub events: &'a EventSink,
    pub ids: &'a Arc<CallIds>,
    pub cancel: &'a CancellationToken,
    pub interrupts: &'a InterruptQueue,
    pub artifacts: &'a Arc<dyn ArtifactSink>,
    /// The run's tool slots, shared by all its steps.
    pub tool_slots: &'a ToolSlots,
    /// An interrupt may stop this round (another round can follow it).
    pub may_stop: bool,
}

/// Runs `plan` to the end of the round.
pub async fn execute(ctx: &RoundCtx<'_>, plan: &Plan) -> RoundRun {
    let mut ex = Executor {
        ctx,
        states: plan
            .steps
            .iter()
            .map(|s| StepState {
                model: pick_model(ctx.setup, s.model_hint.as_deref()).0,
                step: s.clone(),
                status: None,
                result: None,
                error: None,
                duration_ms: None,
                run: None,
            })
            .collect(),
        permits: Arc::new(Semaphore::new(ctx.setup.dag.max_concurrency)),
        tasks: JoinSet::new(),
        task_index: HashMap::new(),
        usage: Usage::default(),
        iterations: 0,
        tool_calls: 0,
        stopping: false,
    };
    ex.run().await;
    RoundRun {
        steps: ex.states,
        usage: ex.usage,
        iterations: ex.iterations,
        tool_calls: ex.tool_calls,
    }
}

/// A step task's output: its index in the round, and its run.
type Finished = (usize, StepRun);

struct Executor<'c, 'a> {
    ctx: &'c RoundCtx<'a>,
    states: Vec<StepState>,
    permits: Arc<Semaphore>,
    tasks: JoinSet<Finished>,
    task_index: HashMap<tokio::task::Id, usize>,
    usage: Usage,
    iterations: u32,
    tool_calls: u32,
    stopping: bool,
}

impl Executor<'_, '_> {
    async fn run(&mut self) {
        let ctx = self.ctx;
        loop {
            let interrupted = ctx.may_stop && ctx.interrupts.has_pending();
            if !self.stopping && (ctx.cancel.is_cancelled() || interrupted) {
                self.stop();
            }
            if !self.stopping {
                self.cascade();
                self.queue_ready();
                self.launch();
            }
            if self.tasks.is_empty() {
                self.fail_stuck();
                return;
            }
            let watch_interrupts = ctx.may_stop && !self.stopping;
            tokio::select! {
                joined = self.tasks.join_next_with_id() => self.joined(joined),
                _ = ctx.cancel.cancelled(), if !self.stopping => {}
                _ = ctx.interrupts.wait_pending(), if watch_interrupts => {}
            }
        }
    }

    fn emit(&self, i: usize) {
        let s = &self.states[i];
        let Some(status) = s.status else { return };
        self.ctx.events.send(AgentEvent::Step(StepEvent::DagStep {
            round: self.ctx.round,
            step_id: s.step.id.clone(),
            status,
            model: s.model.clone(),
            result: s
                .result
                .as_deref()
                .map(|r| truncate_chars(r, DISPLAY_RESULT_CHARS)),
            error: s.error.clone(),
            duration_ms: s.duration_ms,
        }));
    }

    fn set(&mut self, i: usize, status: DagStatus, error: Option<String>) {
        self.states[i].status = Some(status);
        self.states[i].error = error;
        self.emit(i);
    }

    /// Every step not running yet is skipped; running ones go on.
    fn stop(&mut self) {
        self.stopping = true;
        for i in 0..self.states.len() {
            if matches!(self.states[i].status, None | Some(DagStatus::Queued)) {
                self.set(i, DagStatus::Skipped, None);
            }
        }
    }

    fn status_of(&self, id: &str) -> Option<DagStatus> {
        self.states
            .iter()
            .find(|s| s.step.id == id)
            .and_then(|s| s.status)
    }

    /// Fails, without running, every waiting step whose dependency failed (until stable).
    fn cascade(&mut self) {
        loop {
            let found = (0..self.states.len()).find_map(|i| {
                if self.states[i].status.is_some() {
                    return None;
                }
                self.states[i]
                    .step
                    .dependencies
                    .iter()
                    .find(|d| {
                        matches!(
                            self.status_of(d),
                            Some(DagStatus::Failed | DagStatus::Skipped)
                        )
                    })
                    .map(|d| (i, d.clone()))
            });
            let Some((i, dep)) = found else { return };
            self.set(
                i,
                DagStatus::Failed,
                Some(format!("dependency {dep} failed")),
            );
        }
    }

    /// Waiting steps whose dependencies all completed become `queued`.
    fn queue_ready(&mut self) {
        for i in 0..self.states.len() {
            let ready = self.states[i].status.is_none()
                && self.states[i]
                    .step
                    .dependencies
                    .iter()
                    .all(|d| self.status_of(d) == Some(DagStatus::Completed));
            if ready {
                self.set(i, DagStatus::Queued, None);
            }
        }
    }

    /// Queued steps start, in plan order, while permits are free.
    fn launch(&mut self) {
        for i in 0..self.states.len() {
            if self.states[i].status != Some(DagStatus::Queued) {
                continue;
            }
            let Ok(permit) = self.permits.clone().try_acquire_owned() else {
                return;
            };
            let job = self.job(i);
            self.states[i].model = job.model.0.clone();
            self.set(i, DagStatus::Running, None);
            let ctx = self.ctx;
            let fut = run_step(
                ctx.setup.clone(),
                job,
                ctx.events.clone(),
                ctx.ids.clone(),
                ctx.cancel.clone(),
                ctx.artifacts.clone(),
                ctx.tool_slots.clone(),
            );
            let span = step_span(&self.states[i].step.id, &self.states[i].model, ctx);
            let handle = self.tasks.spawn(async move {
                let run = span.scope(fut).await;
                let failed = run.timed_out || run.result.outcome.status == RunStatus::Failed;
                span.end(failed.then_some("the step failed"));
                drop(permit);
                (i, run)
            });
            self.task_index.insert(handle.id(), i);
        }
    }

    fn job(&self, i: usize) -> StepJob {
        let ctx = self.ctx;
        let step = &self.states[i].step;
        let deps: Vec<DepResult<'_>> = step
            .dependencies
            .iter()
            .filter_map(|d| self.states.iter().find(|s| &s.step.id == d))
            .map(|s| DepResult {
                id: &s.step.id,
                task: &s.step.task,
                result: s.result.as_deref().unwrap_or_default(),
            })
            .collect();
        let cut = ctx.setup.react.synthesis_truncation;
        StepJob {
            round: ctx.round,
            step_id: step.id.clone(),
            query: step_query(ctx.goal, step, &deps, cut),
            history: ctx.history.to_vec(),
            // Chosen now, when the step starts, and kept for its whole loop.
            model: pick_model(ctx.setup, step.model_hint.as_deref()),
            run_id: ctx.run_id.to_string(),
            conversation_id: ctx.conversation_id.to_string(),
        }
    }

    fn joined(
        &mut self,
        joined: Option<Result<(tokio::task::Id, Finished), tokio::task::JoinError>>,
    ) {
        match joined {
            None => {}
            Some(Ok((_, (i, run)))) => self.finished(i, run),
            Some(Err(e)) => {
                tracing::error!(error = %e, "a DAG step task failed");
                if let Some(i) = self.task_index.get(&e.id()).copied() {
                    self.set(i, DagStatus::Failed, Some("internal error".into()));
                }
            }
        }
    }

    fn finished(&mut self, i: usize, run: StepRun) {
        let timeout = self.ctx.setup.dag.step_timeout_s;
        let o = &run.result.outcome;
        self.usage += o.usage;
        self.iterations += o.iterations;
        self.tool_calls += o.tool_calls;
        let (status, error) = match o.status {
            // A step the budget stopped keeps what it found; the run's status says the rest.
            RunStatus::Completed | RunStatus::MaxIterations | RunStatus::BudgetExceeded => {
                (DagStatus::Completed, None)
            }
            RunStatus::Cancelled if run.timed_out => (
                DagStatus::Failed,
                Some(format!("timed out after {timeout} s")),
            ),
            RunStatus::Cancelled => (DagStatus::Failed, Some("cancelled".into())),
            // A step's loop offers no caller tools, so it never waits for them.
            RunStatus::Failed | RunStatus::Running | RunStatus::RequiresAction => (
                DagStatus::Failed,
                Some(o.error.clone().unwrap_or_else(|| o.answer.clone())),
            ),
        };
        let s = &mut self.states[i];
        s.result = (status == DagStatus::Completed).then(|| o.answer.clone());
        s.duration_ms = Some(run.duration_ms);
        s.run = Some(run.result);
        self.set(i, status, error);
    }

    /// Cannot happen with a validated plan; kept so a bug ends the round instead of hanging.
    fn fail_stuck(&mut self) {
        for i in 0..self.states.len() {
            if matches!(self.states[i].status, None | Some(DagStatus::Queued)) {
                self.set(i, DagStatus::Failed, Some("never became ready".into()));
            }
        }
    }
}

/// A step's `invoke_agent` span, under the run's `invoke_workflow`.
fn step_span(step_id: &str, model: &str, ctx: &RoundCtx<'_>) -> Child {
    use crate::telemetry::spans::{AGENT_NAME, CONVERSATION, REQUEST_MODEL, RUN_ID};
    use opentelemetry::KeyValue;
    if !crate::telemetry::enabled() {
        return Child::default();
    }
    Child::start(
        format!("invoke_agent {step_id}"),
        "invoke_agent",
        vec![
            KeyValue::new(AGENT_NAME, step_id.to_string()),
            KeyValue::new(REQUEST_MODEL, model.to_string()),
            KeyValue::new(CONVERSATION, ctx.conversation_id.to_string()),
            KeyValue::new(RUN_ID, ctx.run_id.to_string()),
            KeyValue::new("reagent.dag.round", i64::from(ctx.round)),
        ],
    )
}
