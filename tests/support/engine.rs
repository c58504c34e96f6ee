//! `Harness`: a `ReActAgent` run in-process with its handles (to interrupt or cancel it) and
//! the events it emitted, plus small readers of those events and JSON-mode replies.

use std::sync::Arc;

use reagent::agent::artifacts::MemoryArtifacts;
use reagent::agent::events::{AgentEvent, AnswerEvent, StepEvent};
use reagent::agent::hooks::HookRunner;
use reagent::agent::{AgentConfig, AgentResult, InterruptQueue, ReActAgent, RunHandles, RunInput};
use reagent::llm::{Llm, ToolDefinition};
use reagent::tools::ToolRegistry;
use serde_json::{json, Value};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// A run in progress: its handles, so tests can interrupt or cancel.
pub struct Harness {
    pub agent: Arc<ReActAgent>,
    pub queue: Arc<InterruptQueue>,
    pub cancel: CancellationToken,
    pub artifacts: Arc<MemoryArtifacts>,
}

impl Harness {
    pub fn new(
        llm: Arc<dyn Llm>,
        tools: ToolRegistry,
        hooks: HookRunner,
        cfg: AgentConfig,
    ) -> Self {
        super::log::init();
        Self {
            agent: Arc::new(ReActAgent::new(llm, tools, hooks, cfg)),
            queue: Arc::new(InterruptQueue::new()),
            cancel: CancellationToken::new(),
            artifacts: Arc::new(MemoryArtifacts::new()),
        }
    }

    pub async fn run(&self, query: &str) -> (AgentResult, Vec<AgentEvent>) {
        self.run_with_caller_tools(query, Vec::new()).await
    }

    /// A run whose caller declared `caller_tools` (it runs them itself).
    pub async fn run_with_caller_tools(
        &self,
        query: &str,
        caller_tools: Vec<ToolDefinition>,
    ) -> (AgentResult, Vec<AgentEvent>) {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let handles = RunHandles {
            checkpoints: None,
            events: tx.into(),
            interrupts: self.queue.clone(),
            cancel: self.cancel.clone(),
            artifacts: self.artifacts.clone(),
            tool_slots: Default::default(),
        };
        let input = RunInput {
            run_id: "run-1".into(),
            conversation_id: "conv-1".into(),
            query: query.into(),
            history: vec![],
            model_name: None,
            client_tools: caller_tools,
            images: Vec::new(),
        };
        let result = self.agent.run(input, handles).await;
        let mut events = Vec::new();
        while let Ok(e) = rx.try_recv() {
            events.push(e);
        }
        (result, events)
    }
}

/// Runs with default config.
pub async fn run_simple(
    llm: Arc<dyn Llm>,
    tools: ToolRegistry,
    query: &str,
) -> (AgentResult, Vec<AgentEvent>) {
    Harness::new(llm, tools, HookRunner::default(), AgentConfig::default())
        .run(query)
        .await
}

pub fn names(events: &[AgentEvent]) -> Vec<String> {
    events
        .iter()
        .map(|e| match e {
            AgentEvent::Step(s) => format!(
                "step:{}",
                serde_json::to_value(s).unwrap()["type"].as_str().unwrap()
            ),
            AgentEvent::Answer(a) => format!(
                "answer:{}",
                serde_json::to_value(a).unwrap()["status"].as_str().unwrap()
            ),
            other => other.name().to_string(),
        })
        .collect()
}

pub fn tool_ends(events: &[AgentEvent]) -> Vec<StepEvent> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Step(s @ StepEvent::ToolEnd { .. }) => Some(s.clone()),
            _ => None,
        })
        .collect()
}

pub fn answer_deltas(events: &[AgentEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Answer(AnswerEvent::Delta { content }) => Some(content.as_str()),
            _ => None,
        })
        .collect()
}

/// JSON-mode replies.
pub fn json_tool(name: &str, args: Value) -> String {
    json!({"type": "tool_call", "reasoning": "need it", "tool_name": name, "tool_args": args})
        .to_string()
}

pub fn json_final(answer: &str) -> String {
    json!({"type": "final_answer", "reasoning": "done", "answer": answer}).to_string()
}
