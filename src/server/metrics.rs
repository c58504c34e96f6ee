//! Prometheus metrics (SPEC §3.4) on a recorder owned by the [`Metrics`] handle rather than a
//! global one, so tests can build several apps in one process and each `/metrics` shows only
//! its own numbers. Recording goes through `metrics::with_local_recorder`.
//!
//! Sources: LLM calls, latency and tokens come from [`MeteredLlm`], a wrapper around every
//! model of the registry; run outcomes and tool calls from the run manager's event observer
//! ([`Metrics::run_observer`], called with each typed event as the run emits it); SSE
//! subscribers from a guard held by each stream; active runs are read from the run manager when
//! `/metrics` renders.

use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use futures::StreamExt;
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusRecorder};

use crate::agent::events::{AgentEvent, StepEvent};
use crate::llm::registry::ModelRegistry;
use crate::llm::{Abilities, ChatRequest, ChatResponse, ChatStream, Llm, LlmError, StreamEvent};
use crate::runs::EventObserver;

/// The app's metrics. Cheap to clone.
#[derive(Clone)]
pub struct Metrics {
    recorder: Arc<PrometheusRecorder>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Self {
        Self {
            recorder: Arc::new(PrometheusBuilder::new().build_recorder()),
        }
    }

    fn with<T>(&self, f: impl FnOnce() -> T) -> T {
        metrics::with_local_recorder(&*self.recorder, f)
    }

    /// The Prometheus text, with the active-runs gauge refreshed first, and the number of
    /// alive tokio tasks (a leak detector for soak tests) when called inside a runtime.
    pub fn render(&self, active_runs: usize) -> String {
        let tasks = tokio::runtime::Handle::try_current()
            .ok()
            .map(|h| h.metrics().num_alive_tasks());
        self.with(|| {
            metrics::gauge!("reagent_active_runs").set(active_runs as f64);
            if let Some(n) = tasks {
                metrics::gauge!("reagent_tokio_alive_tasks").set(n as f64);
            }
        });
        self.recorder.handle().render()
    }

    pub fn run_started(&self) {
        self.with(|| metrics::counter!("reagent_runs_started_total").increment(1));
    }

    pub fn run_finished(&self, status: &str) {
        let status = status.to_string();
        self.with(|| metrics::counter!("reagent_runs_total", "status" => status).increment(1));
    }

    pub fn tool_call(&self, tool: &str, error: bool, duration_ms: u64) {
        let tool = tool.to_string();
        self.with(|| {
            metrics::counter!("reagent_tool_calls_total", "tool" => tool.clone()).increment(1);
            if error {
                metrics::counter!("reagent_tool_errors_total", "tool" => tool.clone()).increment(1);
            }
            metrics::histogram!("reagent_tool_duration_seconds", "tool" => tool)
                .record(duration_ms as f64 / 1000.0);
        });
    }

    pub fn llm_call(&self, model: &str, seconds: f64, ok: bool, prompt: u64, completion: u64) {
        let model = model.to_string();
        let outcome = if ok { "ok" } else { "error" };
        self.with(|| {
            metrics::counter!("reagent_llm_calls_total", "model" => model.clone(), "outcome" => outcome)
                .increment(1);
            metrics::histogram!("reagent_llm_latency_seconds", "model" => model.clone())
                .record(seconds);
            metrics::counter!("reagent_llm_tokens_total", "model" => model.clone(), "kind" => "prompt")
                .increment(prompt);
            metrics::counter!("reagent_llm_tokens_total", "model" => model, "kind" => "completion")
                .increment(completion);
        });
    }

    /// A guard counting one SSE subscriber while it lives.
    pub fn sse_subscriber(&self) -> SubscriberGuard {
        self.with(|| metrics::gauge!("reagent_sse_subscribers").increment(1.0));
        SubscriberGuard {
            metrics: self.clone(),
        }
    }

    /// The observer the run manager calls with every event of every run: counts tool calls
    /// (`tool_end` steps) and outcomes (`done`). It runs in the emitting task, on typed events,
    /// so the counters never lag behind the stream and nothing is parsed or kept.
    pub fn run_observer(&self) -> EventObserver {
        let me = self.clone();
        Arc::new(move |ev: &AgentEvent| match ev {
            AgentEvent::Step(StepEvent::ToolEnd {
                tool,
                error,
                duration_ms,
                ..
            }) => me.tool_call(tool, *error, *duration_ms),
            AgentEvent::Done(done) => me.run_finished(done.status.as_str()),
            _ => {}
        })
    }

    /// The same registry with every model wrapped in a [`MeteredLlm`].
    pub fn meter_models(&self, models: &ModelRegistry) -> ModelRegistry {
        let entries = models
            .infos()
            .into_iter()
            .filter_map(|info| {
                let llm = models.get(&info.name)?;
                let metered = Arc::new(MeteredLlm {
                    inner: llm,
                    name: info.name.clone(),
                    metrics: self.clone(),
                }) as Arc<dyn Llm>;
                Some((info, metered))
            })
            .collect();
        // The names and default come from a valid registry, so this cannot fail; keep the
        // unmetered one if it somehow does.
        ModelRegistry::from_llms(entries, models.default_name()).unwrap_or_else(|_| models.clone())
    }
}

/// Decrements the subscriber gauge when the SSE stream is dropped (client gone or run over).
pub struct SubscriberGuard {
    metrics: Metrics,
}

impl Drop for SubscriberGuard {
    fn drop(&mut self) {
        self.metrics
            .with(|| metrics::gauge!("reagent_sse_subscribers").decrement(1.0));
    }
}

/// Records calls, latency and tokens of the model it wraps.
pub struct MeteredLlm {
    inner: Arc<dyn Llm>,
    name: String,
    metrics: Metrics,
}

#[async_trait]
impl Llm for MeteredLlm {
    fn model(&self) -> &str {
        self.inner.model()
    }
    fn abilities(&self) -> Abilities {
        self.inner.abilities()
    }
    fn context_window(&self) -> u32 {
        self.inner.context_window()
    }
    fn max_output_tokens(&self) -> u32 {
        self.inner.max_output_tokens()
    }

    async fn chat(&self, request: ChatRequest) -> Result<ChatResponse, LlmError> {
        let started = Instant::now();
        let result = self.inner.chat(request).await;
        let secs = started.elapsed().as_secs_f64();
        match &result {
            Ok(r) => self.metrics.llm_call(
                &self.name,
                secs,
                true,
                r.usage.prompt_tokens,
                r.usage.completion_tokens,
            ),
            Err(_) => self.metrics.llm_call(&self.name, secs, false, 0, 0),
        }
        result
    }

    async fn stream_chat(&self, request: ChatRequest) -> Result<ChatStream, LlmError> {
        let started = Instant::now();
        let stream = match self.inner.stream_chat(request).await {
            Ok(s) => s,
            Err(e) => {
                let secs = started.elapsed().as_secs_f64();
                self.metrics.llm_call(&self.name, secs, false, 0, 0);
                return Err(e);
            }
        };
        let metrics = self.metrics.clone();
        let name = self.name.clone();
        // Latency of a stream is its full duration; tokens come from its usage event.
        let metered = stream.map(move |item| {
            match &item {
                Ok(StreamEvent::Usage(u)) => metrics.llm_call(
                    &name,
                    started.elapsed().as_secs_f64(),
                    true,
                    u.prompt_tokens,
                    u.completion_tokens,
                ),
                Err(_) => metrics.llm_call(&name, started.elapsed().as_secs_f64(), false, 0, 0),
                _ => {}
            }
            item
        });
        Ok(Box::pin(metered))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_instances_keep_separate_counts() {
        let a = Metrics::new();
        let b = Metrics::new();
        a.run_finished("completed");
        a.tool_call("calculator", true, 12);
        let text_a = a.render(3);
        let text_b = b.render(0);
        assert!(
            text_a.contains("reagent_runs_total{status=\"completed\"} 1"),
            "{text_a}"
        );
        assert!(text_a.contains("reagent_tool_errors_total{tool=\"calculator\"} 1"));
        assert!(text_a.contains("reagent_active_runs 3"), "{text_a}");
        assert!(!text_b.contains("reagent_runs_total"), "{text_b}");
    }

    #[tokio::test]
    async fn alive_tasks_are_reported_inside_a_runtime() {
        let m = Metrics::new();
        let parked = tokio::spawn(std::future::pending::<()>());
        let text = m.render(0);
        let line = text
            .lines()
            .find(|l| l.starts_with("reagent_tokio_alive_tasks "))
            .unwrap_or_else(|| panic!("no alive-task gauge in {text}"));
        let n: f64 = line["reagent_tokio_alive_tasks ".len()..].parse().unwrap();
        assert!(n >= 1.0, "{line}");
        parked.abort();
        // Outside a runtime there is nothing to report, and rendering still works.
        let outside = std::thread::spawn(|| Metrics::new().render(0))
            .join()
            .unwrap();
        assert!(!outside.contains("reagent_tokio_alive_tasks"), "{outside}");
    }

    #[test]
    fn subscriber_gauge_follows_guards() {
        let m = Metrics::new();
        let g1 = m.sse_subscriber();
        let _g2 = m.sse_subscriber();
        drop(g1);
        assert!(m.render(0).contains("reagent_sse_subscribers 1"));
    }
}
