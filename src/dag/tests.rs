//! DAG engine tests with routed scripted models (no network, no timing thresholds: order and
//! overlap come from the models' logical clock and the event stream). Helpers here; the cases
//! in `tests/` by theme.

use std::sync::Arc;
use std::time::Duration;

use futures::future::{BoxFuture, FutureExt};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::plan::{parse, single_step, validate, PlanError};
use super::prompts::{ANALYSER_SYSTEM, PLANNER_SYSTEM, ROUTER_SYSTEM};
use super::{DagEngine, DagResult, DagSetup};
use crate::agent::artifacts::MemoryArtifacts;
use crate::agent::events::{DagStatus, StepEvent};
use crate::agent::hooks::HookRunner;
use crate::agent::{AgentConfig, AgentEvent, EventSink, InterruptQueue, RunHandles, RunInput};
use crate::config::DagConfig;
use crate::llm::registry::{ModelInfo, ModelRegistry};
use crate::llm::{Abilities, ChatRequest, ChatResponse, Llm, LlmError, Role};
use crate::testing::routed::{Calls, ChatFn, Recorded, RoutedLlm};
use crate::testing::scripted::response;
use crate::tools::builtin::Calculator;
use crate::tools::ToolRegistry;

mod model_text;
mod rounds;
mod scheduling;

/// What a request is, read from its prompts.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Kind {
    Plan,
    Analyse,
    Route,
    /// A step's loop call, by the step's task.
    Step(String),
    Other,
}

pub(super) fn kind(req: &ChatRequest) -> Kind {
    let system = req
        .messages
        .first()
        .filter(|m| m.role == Role::System)
        .map(|m| m.content.as_str())
        .unwrap_or_default();
    if system.starts_with(PLANNER_SYSTEM) {
        return Kind::Plan;
    }
    if system.starts_with(ANALYSER_SYSTEM) {
        return Kind::Analyse;
    }
    if system.starts_with(ROUTER_SYSTEM) {
        return Kind::Route;
    }
    req.messages
        .iter()
        .find_map(|m| m.content.split("\nYour task: ").nth(1))
        .and_then(|rest| rest.lines().next())
        .map(|task| Kind::Step(task.to_string()))
        .unwrap_or(Kind::Other)
}

/// The last user message of a request.
pub(super) fn user_text(req: &ChatRequest) -> String {
    req.messages
        .iter()
        .rev()
        .find(|m| m.role == Role::User)
        .map(|m| m.content.clone())
        .unwrap_or_default()
}

pub(super) fn ok(text: &str) -> BoxFuture<'static, Result<ChatResponse, LlmError>> {
    futures::future::ready(Ok(response(text, vec![]))).boxed()
}

pub(super) fn ok_json(v: Value) -> BoxFuture<'static, Result<ChatResponse, LlmError>> {
    ok(&v.to_string())
}

/// A plan reply: `(id, task, dependencies, model_hint)`.
pub(super) fn plan_json(steps: &[(&str, &str, &[&str], Option<&str>)]) -> Value {
    let steps: Vec<Value> = steps
        .iter()
        .map(|(id, task, deps, hint)| {
            json!({"id": id, "task": task, "dependencies": deps, "model_hint": hint})
        })
        .collect();
    json!({ "steps": steps })
}

pub(super) fn verdict(achieved: bool, confidence: f64) -> Value {
    json!({"achieved": achieved, "confidence": confidence, "reasoning": "judged"})
}

/// Test models on a shared clock, and the engine's settings.
pub(super) struct Harness {
    pub calls: Calls,
    pub models: ModelRegistry,
    pub dag: DagConfig,
    pub queue: Arc<InterruptQueue>,
    pub cancel: CancellationToken,
}

fn info(name: &str, roles: &[&str]) -> ModelInfo {
    ModelInfo {
        name: name.into(),
        model: name.into(),
        abilities: Abilities::default(),
        context_window: 128_000,
        max_output_tokens: 4096,
        hints: vec![],
        roles: roles.iter().map(|r| r.to_string()).collect(),
        default: false,
        needs_key: false,
        demo: false,
    }
}

impl Harness {
    /// One model, `main`, answering with `chat`.
    pub fn new(chat: ChatFn) -> Self {
        let calls = Calls::default();
        let main = Arc::new(RoutedLlm::new("main", &calls, chat)) as Arc<dyn Llm>;
        Self::with_models(calls, vec![(info("main", &[]), main)])
    }

    pub fn with_models(calls: Calls, models: Vec<(ModelInfo, Arc<dyn Llm>)>) -> Self {
        Self {
            calls,
            models: ModelRegistry::from_llms(models, "main").expect("registry"),
            dag: DagConfig::default(),
            queue: Arc::new(InterruptQueue::new()),
            cancel: CancellationToken::new(),
        }
    }

    pub fn info(name: &str, roles: &[&str]) -> ModelInfo {
        info(name, roles)
    }

    /// Runs `query` to `done` (a hung engine fails the test instead of hanging it).
    pub async fn run(&self, query: &str) -> (DagResult, Vec<AgentEvent>) {
        let setup = DagSetup {
            llm: self.models.default_llm(),
            model_name: "main".into(),
            models: self.models.clone(),
            tools: ToolRegistry::new().with(Arc::new(Calculator)),
            hooks: HookRunner::default(),
            react: AgentConfig::default(),
            dag: self.dag.clone(),
            mode: None,
            system_prompt: None,
            compact_llm: None,
        };
        let (sink, mut rx) = EventSink::channel();
        let handles = RunHandles {
            events: sink,
            interrupts: self.queue.clone(),
            cancel: self.cancel.clone(),
            artifacts: Arc::new(MemoryArtifacts::default()),
            tool_slots: Default::default(),
            checkpoints: None,
        };
        let input = RunInput {
            run_id: "run".into(),
            conversation_id: "conv".into(),
            query: query.into(),
            history: vec![],
            model_name: Some("main".into()),
            client_tools: Vec::new(),
            images: Vec::new(),
        };
        let engine = DagEngine::new(setup);
        let result = tokio::time::timeout(Duration::from_secs(60), engine.run(input, handles))
            .await
            .expect("the DAG run hung");
        let mut events = Vec::new();
        while let Ok(e) = rx.try_recv() {
            events.push(e);
        }
        (result, events)
    }

    /// Every call of a step (by task).
    pub fn step_calls(&self, task: &str) -> Vec<Recorded> {
        self.calls
            .all()
            .into_iter()
            .filter(|c| kind(&c.request) == Kind::Step(task.into()))
            .collect()
    }
}

/// `(round, step_id, status)` of every `dag_step` event, in order.
pub(super) fn statuses(events: &[AgentEvent]) -> Vec<(u32, String, DagStatus)> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Step(StepEvent::DagStep {
                round,
                step_id,
                status,
                ..
            }) => Some((*round, step_id.clone(), *status)),
            _ => None,
        })
        .collect()
}

/// The final status of `id` in `round`.
pub(super) fn final_status(events: &[AgentEvent], round: u32, id: &str) -> Option<DagStatus> {
    statuses(events)
        .into_iter()
        .rev()
        .find(|(r, s, st)| *r == round && s == id && st.is_final())
        .map(|(_, _, st)| st)
}

pub(super) fn count(events: &[AgentEvent], pred: impl Fn(&StepEvent) -> bool) -> usize {
    events
        .iter()
        .filter(|e| matches!(e, AgentEvent::Step(s) if pred(s)))
        .count()
}

/// The run's `done` outcome.
pub(super) fn done(events: &[AgentEvent]) -> crate::agent::RunOutcome {
    match events.last() {
        Some(AgentEvent::Done(o)) => o.clone(),
        other => panic!("the last event is not done: {other:?}"),
    }
}

#[test]
fn duplicates_are_reported_as_duplicates_not_cycles() {
    let p = parse(&json!({"steps": [
        {"id": "a", "task": "x", "dependencies": ["a"]},
        {"id": "a", "task": "y", "dependencies": []}
    ]}))
    .unwrap();
    assert_eq!(validate(&p, 10), Err(PlanError::Duplicate("a".into())));
}

#[test]
fn validation_catches_every_rule() {
    let p = |v: Value| parse(&v).unwrap();
    assert_eq!(
        validate(&p(json!({"steps": []})), 10),
        Err(PlanError::Empty)
    );
    let three = p(plan_json(&[
        ("a", "x", &[], None),
        ("b", "y", &[], None),
        ("c", "z", &[], None),
    ]));
    assert_eq!(validate(&three, 2), Err(PlanError::TooMany(3, 2)));
    let unknown = p(plan_json(&[("a", "x", &["z"], None)]));
    assert_eq!(
        validate(&unknown, 10),
        Err(PlanError::UnknownDependency("a".into(), "z".into()))
    );
    let cycle = p(plan_json(&[
        ("a", "x", &["b"], None),
        ("b", "y", &["a"], None),
    ]));
    let Err(PlanError::Cycle(path)) = validate(&cycle, 10) else {
        panic!("no cycle found");
    };
    assert_eq!(path.first(), path.last());
    assert!(validate(&single_step("q"), 10).is_ok());
}

#[test]
fn lenient_shapes_are_read() {
    let double = json!({"steps": "[{\"id\": 1, \"task\": \"t\", \"model_hint\": \"\"}]"});
    let p = parse(&double).unwrap();
    assert_eq!(p.steps[0].id, "1");
    assert_eq!(p.steps[0].model_hint, None);
    let bare = parse(&json!({"id": "a", "task": "t"})).unwrap();
    assert_eq!(bare.steps.len(), 1);
    assert!(parse(&json!({"answer": 1})).is_err());
}
