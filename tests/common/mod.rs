//! Shared helpers for engine tests: small tools with known behaviour and a harness that runs
//! an agent and collects its events.
#![allow(dead_code)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use reagent::agent::artifacts::MemoryArtifacts;
use reagent::agent::events::{AgentEvent, AnswerEvent, StepEvent};
use reagent::agent::hooks::HookRunner;
use reagent::agent::{AgentConfig, AgentResult, InterruptQueue, ReActAgent, RunHandles, RunInput};
use reagent::llm::Llm;
use reagent::tools::{Artifact, Tool, ToolError, ToolOutput, ToolRegistry};
use serde_json::{json, Value};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Returns a fixed text, after an optional delay; records the arguments it received.
pub struct FakeTool {
    pub name: String,
    pub result: String,
    pub delay: Duration,
    pub writes: bool,
    pub seen: Mutex<Vec<Value>>,
    pub calls: AtomicUsize,
}

impl FakeTool {
    pub fn new(name: &str, result: &str) -> Arc<Self> {
        Arc::new(Self::build(name, result, Duration::ZERO))
    }
    pub fn slow(name: &str, result: &str, delay: Duration) -> Arc<Self> {
        Arc::new(Self::build(name, result, delay))
    }
    pub fn build(name: &str, result: &str, delay: Duration) -> Self {
        Self {
            name: name.into(),
            result: result.into(),
            delay,
            writes: false,
            seen: Mutex::new(Vec::new()),
            calls: AtomicUsize::new(0),
        }
    }
    pub fn seen(&self) -> Vec<Value> {
        self.seen.lock().unwrap().clone()
    }
    pub fn call_count(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

#[async_trait]
impl Tool for FakeTool {
    fn name(&self) -> &str {
        &self.name
    }
    fn description(&self) -> &str {
        "A test tool that returns a fixed result."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {"x": {"type": "string"}}})
    }
    fn writes(&self) -> bool {
        self.writes
    }
    async fn call(&self, args: Value) -> Result<ToolOutput, ToolError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.seen.lock().unwrap().push(args);
        if !self.delay.is_zero() {
            tokio::time::sleep(self.delay).await;
        }
        Ok(ToolOutput::text(self.result.clone()))
    }
}

/// Fails, panics, or produces an artifact.
pub enum Behaviour {
    Fail,
    Panic,
    Artifact,
    Sleep(Duration),
}

pub struct OddTool(pub &'static str, pub Behaviour);

#[async_trait]
impl Tool for OddTool {
    fn name(&self) -> &str {
        self.0
    }
    fn description(&self) -> &str {
        "A misbehaving test tool."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object"})
    }
    fn timeout(&self) -> Option<Duration> {
        match self.1 {
            Behaviour::Sleep(_) => Some(Duration::from_millis(100)),
            _ => None,
        }
    }
    async fn call(&self, _args: Value) -> Result<ToolOutput, ToolError> {
        match &self.1 {
            Behaviour::Fail => Err(ToolError::Failed("disk on fire".into())),
            Behaviour::Panic => panic!("tool exploded"),
            Behaviour::Artifact => Ok(ToolOutput {
                content: "<html><body>report</body></html>".into(),
                artifacts: vec![Artifact {
                    name: "report.html".into(),
                    mime_type: "text/html".into(),
                    data: b"<html><body>report</body></html>".to_vec(),
                }],
            }),
            Behaviour::Sleep(d) => {
                tokio::time::sleep(*d).await;
                Ok(ToolOutput::text("late"))
            }
        }
    }
}

pub fn registry(tools: Vec<Arc<dyn Tool>>) -> ToolRegistry {
    let mut r = ToolRegistry::new();
    for t in tools {
        r.register(t);
    }
    r
}

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
        Self {
            agent: Arc::new(ReActAgent::new(llm, tools, hooks, cfg)),
            queue: Arc::new(InterruptQueue::new()),
            cancel: CancellationToken::new(),
            artifacts: Arc::new(MemoryArtifacts::new()),
        }
    }

    pub async fn run(&self, query: &str) -> (AgentResult, Vec<AgentEvent>) {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let handles = RunHandles {
            events: tx.into(),
            interrupts: self.queue.clone(),
            cancel: self.cancel.clone(),
            artifacts: self.artifacts.clone(),
        };
        let input = RunInput {
            run_id: "run-1".into(),
            conversation_id: "conv-1".into(),
            query: query.into(),
            history: vec![],
            model_name: None,
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
