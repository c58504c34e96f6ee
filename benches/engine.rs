//! Engine overhead per loop iteration (scripted LLM with no delay, no-op tool) in native and
//! JSON mode with 10 and 200 messages of history, and the context-guard estimate.
//!
//! Run: `cargo bench --bench engine`. Criterion reports time per run; each run performs
//! `ITERATIONS` tool iterations plus the final-answer iteration, and the throughput line
//! ("elem/s") counts loop iterations, so 1/throughput is the cost of one iteration. Synthesis
//! (one streamed call) is included in the run and amortised over the iterations.

// Test code may panic on what it did not expect (Cargo.toml [lints]).
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use async_trait::async_trait;
use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, Throughput};
use reagent::agent::artifacts::MemoryArtifacts;
use reagent::agent::context::estimate_tokens;
use reagent::agent::hooks::HookRunner;
use reagent::agent::{AgentConfig, InterruptQueue, ReActAgent, RunHandles, RunInput};
use reagent::llm::Message;
use reagent::testing::ScriptedLlm;
use reagent::tools::{Tool, ToolError, ToolOutput, ToolRegistry};
use serde_json::{json, Value};

const ITERATIONS: usize = 10;

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

fn scripted(json_mode: bool) -> Arc<ScriptedLlm> {
    let llm = Arc::new(if json_mode {
        ScriptedLlm::json()
    } else {
        ScriptedLlm::native()
    });
    for i in 0..ITERATIONS {
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

fn bench_iterations(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut group = c.benchmark_group("engine_iteration");
    group.throughput(Throughput::Elements(ITERATIONS as u64 + 1));
    for json_mode in [false, true] {
        for hist in [10usize, 200] {
            let id = BenchmarkId::new(if json_mode { "json" } else { "native" }, hist);
            let past = history(hist);
            group.bench_with_input(id, &hist, |b, _| {
                b.iter_batched(
                    || {
                        let cfg = AgentConfig {
                            completion_check: false,
                            ..AgentConfig::default()
                        };
                        let tools = ToolRegistry::new().with(Arc::new(Noop));
                        let agent =
                            ReActAgent::new(scripted(json_mode), tools, HookRunner::default(), cfg);
                        (agent, past.clone())
                    },
                    |(agent, past)| {
                        rt.block_on(async {
                            let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
                            let handles = RunHandles {
                                checkpoints: None,
                                events: tx.into(),
                                interrupts: Arc::new(InterruptQueue::new()),
                                cancel: Default::default(),
                                artifacts: Arc::new(MemoryArtifacts::new()),
                            };
                            let input = RunInput {
                                run_id: "r".into(),
                                conversation_id: "c".into(),
                                query: "bench".into(),
                                history: past,
                                model_name: None,
                            };
                            let r = agent.run(input, handles).await;
                            assert_eq!(r.outcome.iterations as usize, ITERATIONS + 1);
                            drop(rx);
                        })
                    },
                    BatchSize::SmallInput,
                )
            });
        }
    }
    group.finish();
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
