//! One DAG step: a fresh [`ReActAgent`] — same hooks, tools and safeguards as a ReAct
//! run, `DAG_STEP_MAX_ITERATIONS`, the model its `model_hint` names — running only the tool loop
//! ([`ReActAgent::run_loop`]) under the step's timeout, which starts when the step does. Its
//! events go to the run's sink tagged with `dag_step`, with call ids kept unique across the
//! run's concurrent steps (docs/api.md).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::plan::PlanStep;
use super::prompts::TASK_CHARS;
use super::setup::DagSetup;
use crate::agent::events::StepEvent;
use crate::agent::synthesis::truncate_chars;
use crate::agent::{
    AgentEvent, AgentResult, EventSink, InterruptQueue, ReActAgent, RunHandles, RunInput,
};
use crate::domain::text::{clip, NAME_CHARS};
use crate::llm::{Llm, Message};
use crate::telemetry::{with_call_kind, CallKind};

/// The model a step with `hint` runs on: the first model with that role, else the run's.
pub(super) fn pick_model(setup: &DagSetup, hint: Option<&str>) -> (String, Arc<dyn Llm>) {
    hint.and_then(|h| setup.models.by_role(h))
        .map(|(info, llm)| (info.name, llm))
        .unwrap_or_else(|| (setup.model_name.clone(), setup.llm.clone()))
}

/// A dependency's outcome as the step's query shows it.
pub(super) struct DepResult<'a> {
    pub id: &'a str,
    pub task: &'a str,
    pub result: &'a str,
}

/// The step's query: the goal, its task, its tool hint, its dependencies' results.
pub(super) fn step_query(
    goal: &str,
    step: &PlanStep,
    deps: &[DepResult<'_>],
    cut: usize,
) -> String {
    let mut q = format!("Original goal: {goal}\n\nYour task: {}\n", step.task);
    if let Some(t) = &step.tool_hint {
        q.push_str(&format!("Suggested tool: {t}\n"));
    }
    if !deps.is_empty() {
        q.push_str(
            "\nResults of the steps this task builds on (use them directly, do not redo them):\n",
        );
        for d in deps {
            q.push_str(&format!(
                "[{}] {}\nResult: {}\n",
                clip(d.id, NAME_CHARS),
                clip(d.task, TASK_CHARS),
                truncate_chars(d.result, cut)
            ));
        }
    }
    q.push_str("\nDo only your task and reply with its result.");
    q
}

/// Everything a step needs besides the engine's setup.
pub(super) struct StepJob {
    pub round: u32,
    pub step_id: String,
    pub query: String,
    pub history: Vec<Message>,
    pub model: (String, Arc<dyn Llm>),
    pub run_id: String,
    pub conversation_id: String,
}

/// What a step did.
pub(super) struct StepRun {
    pub result: AgentResult,
    pub timed_out: bool,
    pub duration_ms: u64,
}

/// Runs one step; `cancel` is the run's token (a step's own child token enforces its timeout,
/// so a timed-out step still ends through the loop's cancellation path, synthetic results and
/// all).
pub(super) async fn run_step(
    setup: Arc<DagSetup>,
    job: StepJob,
    events: EventSink,
    ids: Arc<CallIds>,
    cancel: CancellationToken,
    artifacts: Arc<dyn crate::agent::artifacts::ArtifactSink>,
    tool_slots: crate::agent::ToolSlots,
) -> StepRun {
    let started = Instant::now();
    let (model_name, llm) = job.model;
    let mut cfg = setup.react.clone();
    cfg.max_iterations = setup.dag.step_max_iterations;
    let mut agent = ReActAgent::new(llm, setup.tools.clone(), setup.hooks.clone(), cfg)
        .with_mode(setup.mode)
        .with_system_prompt(setup.system_prompt.clone());
    if let Some(c) = &setup.compact_llm {
        agent = agent.with_compact_llm(c.clone());
    }
    let step_cancel = cancel.child_token();
    let handles = RunHandles {
        events: tagged(events, ids, job.round, job.step_id.clone()),
        // The run's interrupts are the planner's business: the step's loop gets a queue no one
        // writes to.
        interrupts: Arc::new(InterruptQueue::new()),
        cancel: step_cancel.clone(),
        artifacts,
        // A step is not resumed after a crash (the DAG run is failed instead): no checkpoints.
        checkpoints: None,
        tool_slots,
    };
    let input = RunInput {
        run_id: job.run_id,
        conversation_id: job.conversation_id,
        query: job.query,
        history: job.history,
        model_name: Some(model_name),
        client_tools: Vec::new(),
        images: Vec::new(),
    };
    let timeout = Duration::from_secs(setup.dag.step_timeout_s);
    let run = with_call_kind(CallKind::DagStep, agent.run_loop(&input, &handles));
    tokio::pin!(run);
    let (result, timed_out) = tokio::select! {
        r = &mut run => (r, false),
        _ = tokio::time::sleep(timeout) => {
            step_cancel.cancel();
            (run.await, true)
        }
    };
    StepRun {
        result,
        timed_out,
        duration_ms: started.elapsed().as_millis() as u64,
    }
}

/// Call ids seen in the run: each (round, step, provider id) gets one run-unique id, the
/// provider's when free, else `<id>_2`, `<id>_3`….
#[derive(Default)]
pub(super) struct CallIds {
    inner: Mutex<IdTable>,
}

/// The ids in use, and what each (round, step, provider id) became.
#[derive(Default)]
struct IdTable {
    used: HashSet<String>,
    assigned: HashMap<(u32, String, String), String>,
}

impl CallIds {
    fn assign(&self, round: u32, step: &str, id: &str) -> String {
        let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let key = (round, step.to_string(), id.to_string());
        if let Some(known) = g.assigned.get(&key) {
            return known.clone();
        }
        let mut unique = id.to_string();
        let mut n = 2;
        while g.used.contains(&unique) {
            unique = format!("{id}_{n}");
            n += 1;
        }
        g.used.insert(unique.clone());
        g.assigned.insert(key, unique.clone());
        unique
    }
}

/// The run's sink for one step: `dag_step` on its loop events, call ids made run-unique.
fn tagged(parent: EventSink, ids: Arc<CallIds>, round: u32, step: String) -> EventSink {
    EventSink::new(move |mut ev| {
        let tag = Some(step.clone());
        match &mut ev {
            AgentEvent::Step(
                StepEvent::ToolStart {
                    call_id, dag_step, ..
                }
                | StepEvent::ToolEnd {
                    call_id, dag_step, ..
                }
                | StepEvent::ToolProgress {
                    call_id, dag_step, ..
                },
            ) => {
                *call_id = ids.assign(round, &step, call_id);
                *dag_step = tag;
            }
            AgentEvent::Step(
                StepEvent::Thinking { dag_step, .. }
                | StepEvent::ApprovalRequired { dag_step, .. }
                | StepEvent::Limit { dag_step, .. }
                | StepEvent::Safeguard { dag_step, .. },
            ) => *dag_step = tag,
            AgentEvent::Compact(c) => c.dag_step = tag,
            _ => {}
        }
        parent.send(ev)
    })
}
