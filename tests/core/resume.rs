//! The engine's checkpoints and resume (docs/deployment.md), in-process with a scripted model: a run
//! checkpoints before its tool batch; a new agent resumed from that checkpoint emits `resumed`
//! first, answers the call left in flight as interrupted without calling the tool, shows the
//! model that result, and completes; an idempotent tool is called again instead.

use std::sync::{Arc, Mutex};

use reagent::agent::checkpoint::{Checkpoint, CheckpointJson, Resume, INTERRUPTED_TOOL};
use reagent::agent::events::{AgentEvent, RunStatus, StepEvent};
use reagent::agent::hooks::HookRunner;
use reagent::agent::{AgentConfig, InterruptQueue, ReActAgent, RunHandles, RunInput};
use reagent::llm::Llm;
use reagent::testing::ScriptedLlm;
use reagent::tools::ToolRegistry;
use serde_json::json;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::support::engine::{json_final, json_tool, names, tool_ends};
use crate::support::tools::{registry, FakeTool};

pub(crate) fn handles(
    tx: mpsc::UnboundedSender<AgentEvent>,
    checkpoints: Arc<Mutex<Vec<Checkpoint>>>,
) -> RunHandles {
    RunHandles {
        events: tx.into(),
        interrupts: Arc::new(InterruptQueue::new()),
        cancel: CancellationToken::new(),
        artifacts: Arc::new(reagent::agent::artifacts::MemoryArtifacts::new()),
        tool_slots: Default::default(),
        checkpoints: Some(Arc::new(move |json: CheckpointJson| {
            let cp: Checkpoint = serde_json::from_str(&json.join()).unwrap();
            checkpoints.lock().unwrap().push(cp)
        })),
    }
}

fn input() -> RunInput {
    RunInput {
        run_id: "run-1".into(),
        conversation_id: "conv-1".into(),
        query: "look it up".into(),
        history: vec![],
        model_name: None,
        client_tools: Vec::new(),
        images: Vec::new(),
    }
}

fn agent(llm: Arc<ScriptedLlm>, tools: ToolRegistry) -> ReActAgent {
    ReActAgent::new(
        llm as Arc<dyn Llm>,
        tools,
        HookRunner::default(),
        AgentConfig::default(),
    )
}

/// The checkpoint a JSON-mode run takes just before it calls `lookup`.
async fn checkpoint_before_the_call() -> Checkpoint {
    let llm = Arc::new(ScriptedLlm::json());
    llm.text(&json_tool("lookup", json!({"x": "a"})));
    llm.text(&json_final("done"));
    let tool = FakeTool::new("lookup", "found");
    let taken = Arc::new(Mutex::new(Vec::new()));
    let (tx, _rx) = mpsc::unbounded_channel();
    agent(llm, registry(vec![tool]))
        .run(input(), handles(tx, taken.clone()))
        .await;
    let taken = taken.lock().unwrap().clone();
    assert_eq!(
        taken.first().map(|c| c.iterations),
        Some(0),
        "one at the loop's start"
    );
    taken
        .into_iter()
        .find(|c| !c.in_flight.is_empty())
        .expect("a checkpoint naming the call in flight")
}

async fn resume_with(tool: Arc<FakeTool>) -> (Arc<ScriptedLlm>, Vec<AgentEvent>, RunStatus, u32) {
    let cp = checkpoint_before_the_call().await;
    assert_eq!(
        (cp.iterations, cp.in_flight[0].tool.as_str()),
        (1, "lookup")
    );
    let llm = Arc::new(ScriptedLlm::json());
    llm.text(&json_final("the answer"));
    let (tx, mut rx) = mpsc::unbounded_channel();
    let resume = Resume {
        checkpoint: cp,
        reset_answer: false,
        continues: None,
    };
    let result = agent(llm.clone(), registry(vec![tool]))
        .resume(input(), handles(tx, Arc::default()), resume, "node-b")
        .await;
    let mut events = Vec::new();
    while let Ok(e) = rx.try_recv() {
        events.push(e);
    }
    (
        llm,
        events,
        result.outcome.status,
        result.outcome.tool_calls,
    )
}

#[tokio::test]
async fn a_resumed_run_answers_its_call_in_flight_as_interrupted() {
    let tool = FakeTool::new("lookup", "found");
    let (llm, events, status, tool_calls) = resume_with(tool.clone()).await;
    assert_eq!(tool.call_count(), 0, "not called again");
    assert_eq!(status, RunStatus::Completed);
    assert_eq!(tool_calls, 1);
    let labels = names(&events);
    assert_eq!(
        labels.first().map(String::as_str),
        Some("step:resumed"),
        "{labels:?}"
    );
    assert!(!labels.contains(&"start".to_string()), "{labels:?}");
    let Some(AgentEvent::Step(StepEvent::Resumed {
        iteration,
        instance,
    })) = events.first()
    else {
        panic!("{labels:?}");
    };
    assert_eq!((*iteration, instance.as_str()), (1, "node-b"));
    let ends = tool_ends(&events);
    let Some(StepEvent::ToolEnd {
        observation, error, ..
    }) = ends.first()
    else {
        panic!("{labels:?}");
    };
    assert_eq!((observation.as_str(), *error), (INTERRUPTED_TOOL, true));
    // The model's next request carries the interrupted result as the observation.
    let requests = llm.requests();
    let (_, first) = requests.first().expect("a loop call after resume");
    assert!(
        first
            .messages
            .iter()
            .any(|m| m.content.contains(INTERRUPTED_TOOL)),
        "{:?}",
        first.messages
    );
}

#[tokio::test]
async fn a_resumed_run_calls_an_idempotent_tool_again() {
    let tool = FakeTool::text("lookup", "found").idempotent().arc();
    let (_, events, status, _) = resume_with(tool.clone()).await;
    assert_eq!(tool.call_count(), 1, "called again");
    assert_eq!(status, RunStatus::Completed);
    let ends = tool_ends(&events);
    let Some(StepEvent::ToolEnd { error, .. }) = ends.first() else {
        panic!("{:?}", names(&events));
    };
    assert!(!error);
}
