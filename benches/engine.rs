//! Engine overhead per loop iteration (scripted LLM with no delay, no-op tool) in native and
//! JSON mode with 10, 200 and 1,000 messages of history, and the context-guard estimate.
//!
//! Run: `cargo bench --bench engine`. Criterion reports time per run; each run performs K tool
//! iterations (K = 10 and 20) plus the final-answer iteration, and the throughput line
//! ("elem/s") counts loop iterations. Synthesis (one streamed call) and the run's one copy of
//! its input history are included in the run; `(run at K=20 − run at K=10) / 10` cancels them
//! and is the cost of one iteration alone. The scripted LLM keeps no requests, as a real client.
//!
//! `native_cp_*` runs with a checkpoint sink as the service's run manager has: the loop hands
//! it each checkpoint's JSON (two per iteration, docs/deployment.md) and it keeps the latest, as the
//! event writer does until its next flush.
//!
//! `openai_*` and `anthropic_*` run the same loop on a model that speaks each provider's
//! protocol at zero latency (`engine/wire.rs`): every call's request encoded by that provider's
//! client and its reply decoded from that protocol's bytes, the shared HTTP exchange left out.
//! Their difference is the cost of one protocol's encoder over the other's, per iteration.
//!
//! Instruction counts (stable on a shared machine): `ENGINE_ONCE=native_cp,20,1000 valgrind
//! --tool=callgrind target/release/deps/engine-*` runs that one case 20 times and exits; the
//! difference between K = 20 and K = 10, divided by 10 × 20, is one iteration's instructions.

// Test code may panic on what it did not expect (Cargo.toml [lints]).
#![allow(clippy::unwrap_used)]

#[path = "engine/wire.rs"]
mod wire;

use std::sync::Arc;

/// The server's allocator (src/main.rs), so that the engine is measured as it runs there.
#[cfg(all(feature = "jemalloc", not(target_env = "msvc")))]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

use async_trait::async_trait;
use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, Throughput};
use reagent::agent::artifacts::MemoryArtifacts;
use reagent::agent::checkpoint::{CheckpointJson, CheckpointSink};
use reagent::agent::context::estimate_tokens;
use reagent::agent::hooks::HookRunner;
use reagent::agent::{AgentConfig, InterruptQueue, ReActAgent, RunHandles, RunInput};
use reagent::llm::{Llm, Message};
use reagent::testing::ScriptedLlm;
use reagent::tools::{Tool, ToolError, ToolOutput, ToolRegistry};
use serde_json::{json, Value};

/// Tool iterations per run: two values, so the per-run costs cancel in their difference.
const ITERATIONS: [usize; 2] = [10, 20];

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
        json!({"type": "object", "properties": {"i": {"type": "integer"}}})
    }
    async fn call(&self, _args: Value) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text("ok"))
    }
}

fn history(n: usize) -> Vec<Message> {
    (0..n)
        .map(|i| {
            let text = format!("message {i}: {}", "lorem ipsum dolor sit amet ".repeat(8));
            if i % 2 == 0 {
                Message::user(text)
            } else {
                Message::assistant(text)
            }
        })
        .collect()
}

fn scripted(json_mode: bool, iterations: usize) -> Arc<ScriptedLlm> {
    let llm = Arc::new(
        if json_mode {
            ScriptedLlm::json()
        } else {
            ScriptedLlm::native()
        }
        .without_recording(),
    );
    for i in 0..iterations {
        if json_mode {
            llm.text(
                &json!({"type":"tool_call","reasoning":"","tool_name":"noop","tool_args":{"i": i}})
                    .to_string(),
            );
        } else {
            llm.tool_calls(&[(&format!("c{i}"), "noop", &format!(r#"{{"i":{i}}}"#))]);
        }
    }
    if json_mode {
        llm.text(r#"{"type":"final_answer","reasoning":"","answer":"done"}"#);
    } else {
        llm.text("done");
    }
    llm
}

/// A sink that keeps the latest checkpoint (the loop serialised it), as the run manager does.
fn checkpoint_sink() -> CheckpointSink {
    let latest = std::sync::Mutex::new(CheckpointJson::default());
    Arc::new(move |json| *latest.lock().unwrap() = json)
}

/// One run of `iterations` tool iterations over `past`, checked.
fn one_run(
    rt: &tokio::runtime::Runtime,
    agent: ReActAgent,
    past: Vec<Message>,
    iterations: usize,
    checkpoints: bool,
) {
    rt.block_on(async {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let handles = RunHandles {
            checkpoints: checkpoints.then(checkpoint_sink),
            events: tx.into(),
            interrupts: Arc::new(InterruptQueue::new()),
            cancel: Default::default(),
            artifacts: Arc::new(MemoryArtifacts::new()),
            tool_slots: Default::default(),
        };
        let input = RunInput {
            run_id: "r".into(),
            conversation_id: "c".into(),
            query: "bench".into(),
            history: past,
            model_name: None,
            client_tools: Vec::new(),
            images: Vec::new(),
        };
        let r = agent.run(input, handles).await;
        assert_eq!(r.outcome.iterations as usize, iterations + 1);
        drop(rx);
    })
}

/// The model of a case: scripted replies, or one provider's encoder and decoder.
#[derive(Clone, Copy)]
enum Model {
    Scripted { json: bool },
    Wire(wire::Protocol),
}

fn agent(model: Model, k: usize) -> ReActAgent {
    let cfg = AgentConfig {
        completion_check: false,
        ..AgentConfig::default()
    };
    let tools = ToolRegistry::new().with(Arc::new(Noop));
    let llm: Arc<dyn Llm> = match model {
        Model::Scripted { json } => scripted(json, k),
        Model::Wire(protocol) => Arc::new(wire::Wire::new(protocol, k)),
    };
    ReActAgent::new(llm, tools, HookRunner::default(), cfg)
}

/// The cases: (name, model, with checkpoints).
const CASES: [(&str, Model, bool); 5] = [
    ("native", Model::Scripted { json: false }, false),
    ("json", Model::Scripted { json: true }, false),
    ("native_cp", Model::Scripted { json: false }, true),
    ("openai", Model::Wire(wire::Protocol::OpenAi), false),
    ("anthropic", Model::Wire(wire::Protocol::Anthropic), false),
];

fn bench_iterations(c: &mut Criterion) {
    if let Ok(once) = std::env::var("ENGINE_ONCE") {
        return run_once(&once);
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut group = c.benchmark_group("engine_iteration");
    for (mode, model, cp) in CASES {
        for k in ITERATIONS {
            group.throughput(Throughput::Elements(k as u64 + 1));
            for hist in [10usize, 200, 1000] {
                let id = BenchmarkId::new(format!("{mode}_k{k}"), hist);
                let past = history(hist);
                group.bench_with_input(id, &hist, |b, _| {
                    b.iter_batched(
                        || (agent(model, k), past.clone()),
                        |(agent, past)| one_run(&rt, agent, past, k, cp),
                        BatchSize::SmallInput,
                    )
                });
            }
        }
    }
    group.finish();
}

/// `ENGINE_ONCE=case,K,history`: that case 20 times, for an instruction count.
fn run_once(spec: &str) {
    let parts: Vec<&str> = spec.split(',').collect();
    let (mode, k, hist) = (
        parts[0],
        parts[1].parse().unwrap(),
        parts[2].parse().unwrap(),
    );
    let (_, model, cp) = CASES.into_iter().find(|c| c.0 == mode).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let past = history(hist);
    for _ in 0..20 {
        one_run(&rt, agent(model, k), past.clone(), k, cp);
    }
    std::process::exit(0);
}

fn bench_estimate(c: &mut Criterion) {
    let mut group = c.benchmark_group("context_estimate");
    let tools = ToolRegistry::new().with(Arc::new(Noop)).definitions();
    for n in [10usize, 200, 1000] {
        let msgs = history(n);
        group.throughput(Throughput::Elements(n as u64));
        group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
            b.iter(|| estimate_tokens(std::hint::black_box(&msgs), &tools))
        });
    }
    group.finish();
}

criterion_group!(benches, bench_iterations, bench_estimate);
criterion_main!(benches);
