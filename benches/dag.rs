//! The DAG scheduler's own cost per step: models that answer instantly (routed by
//! the request's prompts, since steps call concurrently) and a no-op tool, so what is measured
//! is planning bookkeeping, scheduling, each step's fresh agent and loop, event tagging and the
//! analysis/answer around them. Two shapes of `STEPS` steps: `wide` (all independent, run under
//! `DAG_MAX_CONCURRENCY` = 4) and `chain` (each after the previous one).
//!
//! Run: `cargo bench --bench dag`. Throughput ("elem/s") counts steps, so 1/throughput is the
//! cost of one step including its two loop calls (one tool call, one answer); the plan, the
//! analysis and the streamed answer are amortised over the steps.

use std::sync::Arc;

use async_trait::async_trait;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use futures::future::FutureExt;
use reagent::agent::artifacts::MemoryArtifacts;
use reagent::agent::hooks::HookRunner;
use reagent::agent::{AgentConfig, InterruptQueue, RunHandles, RunInput};
use reagent::config::DagConfig;
use reagent::dag::prompts::{ANALYSER_SYSTEM, PLANNER_SYSTEM};
use reagent::dag::{DagEngine, DagSetup};
use reagent::llm::{ChatRequest, Llm, Role, ToolCall};
use reagent::testing::routed::{Calls, ChatFn, RoutedLlm};
use reagent::testing::scripted::{response, single_model};
use reagent::tools::{Tool, ToolError, ToolOutput, ToolRegistry};
use serde_json::{json, Value};

const STEPS: usize = 8;

struct Noop;

#[async_trait]
impl Tool for Noop {
    fn name(&self) -> &str {
        "noop"
    }
    fn description(&self) -> &str {
        "Does nothing."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {}})
    }
    async fn call(&self, _args: Value) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text("ok"))
    }
}

fn plan(chain: bool) -> Value {
    let steps: Vec<Value> = (0..STEPS)
        .map(|i| {
            let deps: Vec<String> = if chain && i > 0 {
                vec![format!("s{}", i - 1)]
            } else {
                vec![]
            };
            json!({"id": format!("s{i}"), "task": format!("task {i}"), "dependencies": deps})
        })
        .collect();
    json!({ "steps": steps })
}

/// Plan, analysis (achieved), and per step one tool call then an answer.
fn model(chain: bool) -> Arc<dyn Llm> {
    let plan = plan(chain).to_string();
    let chat: ChatFn = Arc::new(move |req: &ChatRequest| {
        let system = req
            .messages
            .first()
            .map(|m| m.content.as_str())
            .unwrap_or("");
        let reply = if system.starts_with(PLANNER_SYSTEM) {
            response(&plan, vec![])
        } else if system.starts_with(ANALYSER_SYSTEM) {
            response(
                r#"{"achieved":true,"confidence":1,"reasoning":"ok"}"#,
                vec![],
            )
        } else if req.messages.iter().any(|m| m.role == Role::Tool) {
            response("step done", vec![])
        } else {
            let call = ToolCall {
                id: "c1".into(),
                name: "noop".into(),
                arguments: "{}".into(),
            };
            response("", vec![call])
        };
        futures::future::ready(Ok(reply)).boxed()
    });
    Arc::new(RoutedLlm::new("bench", &Calls::default(), chat))
}

async fn run_once(llm: Arc<dyn Llm>) {
    let setup = DagSetup {
        llm: llm.clone(),
        model_name: "default".into(),
        models: single_model(llm),
        tools: ToolRegistry::new().with(Arc::new(Noop)),
        hooks: HookRunner::default(),
        react: AgentConfig {
            completion_check: false,
            ..AgentConfig::default()
        },
        dag: DagConfig::default(),
        mode: None,
        system_prompt: None,
        compact_llm: None,
    };
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let handles = RunHandles {
        events: tx.into(),
        interrupts: Arc::new(InterruptQueue::new()),
        cancel: Default::default(),
        artifacts: Arc::new(MemoryArtifacts::new()),
        tool_slots: Default::default(),
        checkpoints: None,
    };
    let input = RunInput {
        run_id: "r".into(),
        conversation_id: "c".into(),
        query: "bench".into(),
        ..RunInput::default()
    };
    let r = DagEngine::new(setup).run(input, handles).await;
    assert_eq!(r.result.outcome.tool_calls as usize, STEPS);
    drop(rx);
}

fn bench_steps(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let mut group = c.benchmark_group("dag_step");
    group.throughput(Throughput::Elements(STEPS as u64));
    for chain in [false, true] {
        let id = BenchmarkId::new(if chain { "chain" } else { "wide" }, STEPS);
        let llm = model(chain);
        group.bench_with_input(id, &chain, |b, _| {
            b.iter(|| rt.block_on(run_once(llm.clone())))
        });
    }
    group.finish();
}

criterion_group!(benches, bench_steps);
criterion_main!(benches);
