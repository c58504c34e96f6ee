//! Prometheus metrics (docs/api.md) on a recorder owned by the [`Metrics`] handle rather than a
//! global one, so tests can build several apps in one process and each `/metrics` shows only
//! its own numbers. Recording goes through `metrics::with_local_recorder`.
//!
//! Sources, wired by [`crate::app`]: LLM calls, latency, tokens and tool calls written in the
//! content from a wrapper around every model of the registry; runs, outcomes and tool calls from the run manager's event observer;
//! SSE subscribers from a guard held by each stream; active runs are read from the run manager
//! when `/metrics` renders.

use std::sync::Arc;

use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusRecorder};

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

    /// The lease figures of docs/deployment.md, as the run manager counts them.
    pub fn leases(&self, c: crate::runs::LeaseCounts) {
        self.with(|| {
            metrics::gauge!("reagent_leases_owned").set(c.owned as f64);
            metrics::counter!("reagent_takeovers_total").absolute(c.takeovers);
            metrics::counter!("reagent_fenced_writes_total").absolute(c.fenced_writes);
            metrics::counter!("reagent_lease_renewal_failures_total").absolute(c.renewal_failures);
            metrics::gauge!("reagent_followed_runs").set(c.followed as f64);
            metrics::counter!("reagent_followed_writes_total").absolute(c.followed_writes);
        });
    }

    /// Tenants past a budget's warning threshold in its current window (no tenant label: the
    /// tenant is in the warning's log line).
    pub fn tenants_over_budget_warning(&self, n: u64) {
        self.with(|| metrics::gauge!("reagent_budget_tenants_over_warning").set(n as f64));
    }

    pub fn run_started(&self) {
        self.with(|| metrics::counter!("reagent_runs_started_total").increment(1));
    }

    /// A run a previous process left `running` goes on from its checkpoint (docs/deployment.md).
    pub fn run_resumed(&self) {
        self.with(|| metrics::counter!("reagent_runs_resumed_total").increment(1));
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

    /// One MCP `tools/call` (docs/protocols.md).
    pub fn mcp_call(&self, server: &str, ok: bool, seconds: f64) {
        let server = server.to_string();
        let outcome = if ok { "ok" } else { "error" };
        self.with(|| {
            metrics::counter!("reagent_mcp_calls_total", "server" => server.clone(), "outcome" => outcome)
                .increment(1);
            metrics::histogram!("reagent_mcp_call_duration_seconds", "server" => server)
                .record(seconds);
        });
    }

    /// `reagent_mcp_server_up{server}`: 1 while the server is ready, refreshed on render.
    pub fn mcp_server_up(&self, server: &str, up: bool) {
        let server = server.to_string();
        self.with(|| {
            metrics::gauge!("reagent_mcp_server_up", "server" => server).set(if up {
                1.0
            } else {
                0.0
            })
        });
    }

    /// One LLM call. `reagent_llm_tokens_total` counts tokens by `type` (`prompt`,
    /// `completion`, `cache_read`, `cache_write`); `kind` repeats it so that queries written
    /// before the cache types existed still select the same series.
    pub fn llm_call(&self, model: &str, seconds: f64, ok: bool, usage: &crate::llm::Usage) {
        let model = model.to_string();
        let outcome = if ok { "ok" } else { "error" };
        let tokens = [
            ("prompt", usage.prompt_tokens),
            ("completion", usage.completion_tokens),
            ("cache_read", usage.cache_read_tokens),
            ("cache_write", usage.cache_write_tokens),
        ];
        self.with(|| {
            metrics::counter!("reagent_llm_calls_total", "model" => model.clone(), "outcome" => outcome)
                .increment(1);
            metrics::histogram!("reagent_llm_latency_seconds", "model" => model.clone())
                .record(seconds);
            for (kind, n) in tokens {
                metrics::counter!("reagent_llm_tokens_total", "model" => model.clone(), "type" => kind, "kind" => kind)
                    .increment(n);
            }
        });
    }

    /// Tool calls a model wrote in its content instead of `tool_calls`, which the loop
    /// recovers: operators see which models need it.
    pub fn content_tool_calls(&self, model: &str, calls: usize) {
        let model = model.to_string();
        self.with(|| {
            metrics::counter!("reagent_llm_content_tool_calls_total", "model" => model)
                .increment(calls as u64)
        });
    }

    /// Tool calls whose name was not a tool of the run but meant one (case, `-`/`_`, a bare
    /// MCP name), which the loop runs as that tool: operators see which models need it.
    pub fn tool_names_resolved(&self, model: &str, calls: usize) {
        let model = model.to_string();
        self.with(|| {
            metrics::counter!("reagent_tool_name_resolved_total", "model" => model)
                .increment(calls as u64)
        });
    }

    /// A guard counting one SSE subscriber while it lives.
    pub fn sse_subscriber(&self) -> SubscriberGuard {
        self.with(|| metrics::gauge!("reagent_sse_subscribers").increment(1.0));
        SubscriberGuard {
            metrics: self.clone(),
        }
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
