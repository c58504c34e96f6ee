//! OpenTelemetry traces (docs/deployment.md, "Tracing"): off unless an OTLP endpoint is set in
//! the standard `OTEL_*` variables; then spans go out over OTLP/HTTP (protobuf), batched by a
//! tokio task on the one reqwest client stack, never on a request or token path.
//!
//! The SDK is used directly, not through the `tracing` layer: the spans are GenAI records with
//! names, kinds and typed attributes decided at run time (`chat {model}`, arrays of finish
//! reasons, integer token counts), a `chat` span outlives the call that opened it (it ends when
//! the stream ends), and a resumed run re-attaches to a trace stored as text. Log verbosity
//! (`RUST_LOG`) then never decides what a trace holds, and with export off every instrumented
//! point is one `OnceLock` read.
//!
//! Files: `spans` (the run, chat and tool spans with the pinned GenAI attributes), `call_kind`
//! (which kind of call a `chat` span is), `export`
//! (the exporter that reports a dead collector at most once a minute), `propagation` (W3C
//! `traceparent` in and out).

pub mod call_kind;
mod export;
pub mod propagation;
pub mod spans;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::sync::OnceLock;
use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::trace::span_processor_with_async_runtime::BatchSpanProcessor;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use opentelemetry_sdk::Resource;

pub use call_kind::{with_call_kind, CallKind};
pub use opentelemetry::Context;
pub use spans::{ChatSpan, RunTrace, ToolSpan};

/// The GenAI semantic-conventions version the span names and attributes follow (README).
pub const SEMCONV_VERSION: &str = "1.41.0";

/// The service name when neither `OTEL_SERVICE_NAME` nor `OTEL_RESOURCE_ATTRIBUTES` names one.
pub const DEFAULT_SERVICE_NAME: &str = "reagent";

/// The variables that turn export on (either one).
const ENDPOINT_VARIABLES: [&str; 2] = [
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
];

/// The process's tracing, set once at start-up.
struct Telemetry {
    provider: SdkTracerProvider,
    tracer: SdkTracer,
    capture_content: bool,
}

static TELEMETRY: OnceLock<Telemetry> = OnceLock::new();

/// What start-up asks of tracing.
#[derive(Clone, Debug, Default)]
pub struct Settings {
    /// `REAGENT_OTEL_CAPTURE_CONTENT`: prompts, answers and tool arguments go on the spans.
    pub capture_content: bool,
}

/// Whether `env` configures an OTLP endpoint.
pub fn configured(env: &HashMap<String, String>) -> bool {
    ENDPOINT_VARIABLES
        .iter()
        .any(|k| env.get(*k).is_some_and(|v| !v.trim().is_empty()))
}

/// Starts exporting when `env` configures an endpoint (the exporter reads the other `OTEL_*`
/// variables itself); needs a tokio runtime. Returns whether tracing is on.
pub fn init(env: &HashMap<String, String>, settings: &Settings) -> Result<bool, String> {
    if !configured(env) || TELEMETRY.get().is_some() {
        return Ok(TELEMETRY.get().is_some());
    }
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .map_err(|e| format!("cannot build the OTLP client: {e}"))?;
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
        .with_http_client(client)
        .build()
        .map_err(|e| format!("OTLP exporter: {e}"))?;
    let processor = BatchSpanProcessor::builder(
        export::Reporting::new(exporter),
        opentelemetry_sdk::runtime::Tokio,
    )
    .build();
    let provider = SdkTracerProvider::builder()
        .with_span_processor(processor)
        .with_resource(resource(env))
        .build();
    let tracer = provider.tracer("reagent");
    opentelemetry::global::set_text_map_propagator(
        opentelemetry_sdk::propagation::TraceContextPropagator::new(),
    );
    let _ = TELEMETRY.set(Telemetry {
        provider,
        tracer,
        capture_content: settings.capture_content,
    });
    Ok(true)
}

/// The resource: the SDK's (`OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`), named `reagent`
/// when they name no service.
fn resource(env: &HashMap<String, String>) -> Resource {
    let named = env.contains_key("OTEL_SERVICE_NAME")
        || env
            .get("OTEL_RESOURCE_ATTRIBUTES")
            .is_some_and(|a| a.contains("service.name="));
    let builder = Resource::builder();
    match named {
        true => builder.build(),
        false => builder.with_service_name(DEFAULT_SERVICE_NAME).build(),
    }
}

/// The tracer, when tracing is on.
pub(crate) fn tracer() -> Option<&'static SdkTracer> {
    TELEMETRY.get().map(|t| &t.tracer)
}

/// Whether tracing is on.
pub fn enabled() -> bool {
    TELEMETRY.get().is_some()
}

/// Whether content (prompts, answers, tool arguments) goes on spans.
pub fn capture_content() -> bool {
    TELEMETRY.get().is_some_and(|t| t.capture_content)
}

/// Exports what is still queued (at shutdown), waiting at most `timeout`.
pub async fn flush(timeout: Duration) {
    let Some(t) = TELEMETRY.get() else { return };
    let provider = t.provider.clone();
    let flushed = tokio::task::spawn_blocking(move || provider.force_flush());
    let _ = tokio::time::timeout(timeout, flushed).await;
}
