//! How the service's parts report to [`Metrics`]: every model of the registry wrapped in a
//! [`MeteredLlm`] (calls, latency, tokens), and the run manager's event observer (runs started
//! and finished, tool calls), which sees each typed event as the run emits it.

use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use futures::StreamExt;

use crate::agent::events::{AgentEvent, StepEvent};
use crate::llm::content_calls::parse_content_calls;
use crate::llm::registry::ModelRegistry;
use crate::llm::traced::TracedLlm;
use crate::llm::{
    Abilities, ChatRequest, ChatResponse, ChatStream, Llm, LlmError, StreamEvent, ToolDefinition,
    Usage,
};
use crate::runs::EventObserver;
use crate::server::Metrics;
use crate::tools::names::resolve;

/// The observer the run manager calls with every event of every run: counts runs (`start`),
/// tool calls (`tool_end` steps) and outcomes (`done`). It runs in the emitting task, on typed
/// events, so the counters never lag behind the stream and nothing is parsed or kept.
pub fn run_observer(metrics: &Metrics) -> EventObserver {
    let me = metrics.clone();
    Arc::new(move |ev: &AgentEvent| match ev {
        AgentEvent::Start(_) => me.run_started(),
        AgentEvent::Step(StepEvent::ToolEnd {
            tool,
            error,
            duration_ms,
            ..
        }) => me.tool_call(tool, *error, *duration_ms),
        AgentEvent::Step(StepEvent::Resumed { .. }) => me.run_resumed(),
        AgentEvent::Done(done) => me.run_finished(done.status.as_str()),
        _ => {}
    })
}

/// Counts MCP calls and their latency by server (docs/protocols.md).
pub fn mcp_observer(metrics: &Metrics) -> crate::tools::mcp::CallObserver {
    let me = metrics.clone();
    Arc::new(move |server: &str, ok: bool, seconds: f64| me.mcp_call(server, ok, seconds))
}

/// The same registry with every model wrapped in a [`MeteredLlm`].
pub fn meter_models(metrics: &Metrics, models: &ModelRegistry) -> ModelRegistry {
    let entries = models
        .infos()
        .into_iter()
        .filter_map(|info| {
            let llm = models.get(&info.name)?;
            let metered = Arc::new(MeteredLlm {
                inner: llm,
                name: info.name.clone(),
                metrics: metrics.clone(),
            }) as Arc<dyn Llm>;
            Some((info, metered))
        })
        .collect();
    // The names and default come from a valid registry, so this cannot fail; keep the
    // unmetered one if it somehow does.
    ModelRegistry::from_llms(entries, models.default_name()).unwrap_or_else(|_| models.clone())
}

/// The same registry with every model wrapped in a [`TracedLlm`] (a `chat` span per call);
/// models the configuration does not list (test fakes) have no endpoint to name.
pub fn trace_models(config: &crate::config::Config, models: &ModelRegistry) -> ModelRegistry {
    let entries = models
        .infos()
        .into_iter()
        .filter_map(|info| {
            let llm = models.get(&info.name)?;
            let base_url = config
                .models
                .iter()
                .find(|m| m.name == info.name)
                .map(|m| m.base_url.as_str())
                .unwrap_or_default();
            let traced = Arc::new(TracedLlm::new(llm, base_url)) as Arc<dyn Llm>;
            Some((info, traced))
        })
        .collect();
    ModelRegistry::from_llms(entries, models.default_name()).unwrap_or_else(|_| models.clone())
}

/// Records calls, latency and tokens of the model it wraps.
pub struct MeteredLlm {
    inner: Arc<dyn Llm>,
    name: String,
    metrics: Metrics,
}

/// Calls written in the content (the same test the loop applies to a native response without
/// tool_calls), and calls whose name the loop resolves to one of `tools`.
fn count_calls(metrics: &Metrics, model: &str, r: &ChatResponse, tools: &[ToolDefinition]) {
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    let resolves = |n: &str| resolve(&names, n).is_some();
    let written = if r.tool_calls.is_empty() {
        parse_content_calls(&r.content, resolves)
    } else {
        None
    };
    if let Some(calls) = &written {
        metrics.content_tool_calls(model, calls.len());
    }
    let calls = written.as_deref().unwrap_or(&r.tool_calls);
    let resolved = calls
        .iter()
        .filter(|c| !names.contains(&c.name.as_str()) && resolves(&c.name))
        .count();
    if resolved > 0 {
        metrics.tool_names_resolved(model, resolved);
    }
}

#[async_trait]
impl Llm for MeteredLlm {
    crate::llm::forward_llm_description!(inner);

    async fn chat(&self, request: ChatRequest) -> Result<ChatResponse, LlmError> {
        let started = Instant::now();
        let tools = request.tools.clone();
        let result = self.inner.chat(request).await;
        let secs = started.elapsed().as_secs_f64();
        match &result {
            Ok(r) => {
                self.metrics.llm_call(&self.name, secs, true, &r.usage);
                if !tools.is_empty() {
                    count_calls(&self.metrics, &self.name, r, &tools);
                }
            }
            Err(_) => self
                .metrics
                .llm_call(&self.name, secs, false, &Usage::default()),
        }
        result
    }

    async fn stream_chat(&self, request: ChatRequest) -> Result<ChatStream, LlmError> {
        let started = Instant::now();
        let tools = request.tools.clone();
        let stream = match self.inner.stream_chat(request).await {
            Ok(s) => s,
            Err(e) => {
                let secs = started.elapsed().as_secs_f64();
                self.metrics
                    .llm_call(&self.name, secs, false, &Usage::default());
                return Err(e);
            }
        };
        let metrics = self.metrics.clone();
        let name = self.name.clone();
        // A loop call's reply (it offers tools), kept to count its calls as `chat` does.
        let mut reply = (!tools.is_empty()).then(ChatResponse::default);
        // Latency of a stream is its full duration; tokens come from its usage event.
        let metered = stream.map(move |item| {
            match &item {
                Ok(StreamEvent::Content(c)) => {
                    if let Some(r) = &mut reply {
                        r.content.push_str(c);
                    }
                }
                Ok(StreamEvent::ToolCalls(calls)) => {
                    if let Some(r) = &mut reply {
                        r.tool_calls.extend(calls.iter().cloned());
                    }
                }
                Ok(StreamEvent::Done { .. }) => {
                    if let Some(r) = reply.take() {
                        count_calls(&metrics, &name, &r, &tools);
                    }
                }
                Ok(StreamEvent::Usage(u)) => {
                    metrics.llm_call(&name, started.elapsed().as_secs_f64(), true, u);
                }
                Err(_) => {
                    let secs = started.elapsed().as_secs_f64();
                    metrics.llm_call(&name, secs, false, &Usage::default());
                }
                _ => {}
            }
            item
        });
        Ok(Box::pin(metered))
    }
}

#[cfg(test)]
mod tests;
