//! The spans of a run, named and attributed as the OpenTelemetry GenAI semantic conventions
//! [`SEMCONV_VERSION`](super::SEMCONV_VERSION) say: `invoke_agent {agent}` per run (or per DAG
//! step; `invoke_workflow` for a DAG run, with a `plan` span per planner call), `chat {model}`
//! per model call, `execute_tool {tool}` per tool call. Every constructor returns nothing to
//! record while tracing is off.

use std::future::Future;

use futures::future::Either;
use opentelemetry::context::FutureExt as _;
use opentelemetry::trace::{SpanKind, Status, TraceContextExt, Tracer as _};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::trace::SdkTracer;

use super::propagation;

mod calls;

pub use calls::{provider_name, ChatAttrs, ChatEnd, ChatSpan, ToolSpan};

pub const OPERATION: &str = "gen_ai.operation.name";
pub const PROVIDER: &str = "gen_ai.provider.name";
pub const AGENT_NAME: &str = "gen_ai.agent.name";
pub const CONVERSATION: &str = "gen_ai.conversation.id";
pub const REQUEST_MODEL: &str = "gen_ai.request.model";
pub const RESPONSE_MODEL: &str = "gen_ai.response.model";
pub const FINISH_REASONS: &str = "gen_ai.response.finish_reasons";
pub const INPUT_TOKENS: &str = "gen_ai.usage.input_tokens";
pub const OUTPUT_TOKENS: &str = "gen_ai.usage.output_tokens";
pub const CACHE_READ_TOKENS: &str = "gen_ai.usage.cache_read.input_tokens";
pub const CACHE_CREATION_TOKENS: &str = "gen_ai.usage.cache_creation.input_tokens";
pub const MAX_TOKENS: &str = "gen_ai.request.max_tokens";
pub const TEMPERATURE: &str = "gen_ai.request.temperature";
pub const TOP_P: &str = "gen_ai.request.top_p";
pub const SERVER_ADDRESS: &str = "server.address";
pub const SERVER_PORT: &str = "server.port";
pub const ERROR_TYPE: &str = "error.type";
pub const TOOL_NAME: &str = "gen_ai.tool.name";
pub const TOOL_CALL_ID: &str = "gen_ai.tool.call.id";
pub const TOOL_TYPE: &str = "gen_ai.tool.type";
pub const TOOL_DESCRIPTION: &str = "gen_ai.tool.description";
pub const TOOL_ARGUMENTS: &str = "gen_ai.tool.call.arguments";
pub const TOOL_RESULT: &str = "gen_ai.tool.call.result";
pub const INPUT_MESSAGES: &str = "gen_ai.input.messages";
pub const OUTPUT_MESSAGES: &str = "gen_ai.output.messages";
/// reagent's own: the run and the tenant (the API key's name) a span belongs to.
pub const RUN_ID: &str = "reagent.run.id";
pub const TENANT: &str = "reagent.tenant";

/// Token counts of a call or a run; the cache counts when the provider reported them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tokens {
    pub input: u64,
    pub output: u64,
    pub cache_read: Option<u64>,
    pub cache_write: Option<u64>,
}

impl Tokens {
    fn attributes(&self) -> Vec<KeyValue> {
        let mut kv = vec![
            KeyValue::new(INPUT_TOKENS, saturate(self.input)),
            KeyValue::new(OUTPUT_TOKENS, saturate(self.output)),
        ];
        if let Some(n) = self.cache_read {
            kv.push(KeyValue::new(CACHE_READ_TOKENS, saturate(n)));
        }
        if let Some(n) = self.cache_write {
            kv.push(KeyValue::new(CACHE_CREATION_TOKENS, saturate(n)));
        }
        kv
    }
}

fn saturate(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// The `error.type` of a failed or cancelled span.
fn fail(cx: &Context, error_type: &str, message: Option<&str>) {
    let span = cx.span();
    span.set_attribute(KeyValue::new(ERROR_TYPE, error_type.to_string()));
    let description = message.unwrap_or(error_type).to_string();
    span.set_status(Status::error(description));
}

/// Who a run's `invoke_agent` span is about.
#[derive(Clone, Debug, Default)]
pub struct AgentAttrs<'a> {
    pub agent: &'a str,
    pub run_id: &'a str,
    pub conversation_id: &'a str,
    pub tenant: &'a str,
    pub model: &'a str,
}

/// How a run (or a DAG step) ended, for its span.
#[derive(Clone, Debug, Default)]
pub struct RunEnd<'a> {
    /// `completed`, `failed`, `cancelled`, `max_iterations`.
    pub status: &'a str,
    pub error: Option<&'a str>,
    pub tokens: Tokens,
    pub iterations: u32,
    pub tool_calls: u32,
}

/// A run's trace: its `invoke_agent` (or `invoke_workflow`) span in a context, or nothing
/// while tracing is off. Cloning shares the span.
#[derive(Clone, Debug, Default)]
pub struct RunTrace {
    cx: Option<Context>,
}

impl RunTrace {
    /// The run's span, a child of `parent` (an incoming request's trace, a stored one).
    pub fn start(parent: &Context, a: &AgentAttrs) -> Self {
        let Some(tracer) = super::tracer() else {
            return Self::default();
        };
        let name = match a.agent {
            "" => "invoke_agent".to_string(),
            agent => format!("invoke_agent {agent}"),
        };
        let span = tracer
            .span_builder(name)
            .with_kind(SpanKind::Internal)
            .with_attributes([
                KeyValue::new(OPERATION, "invoke_agent"),
                KeyValue::new(AGENT_NAME, a.agent.to_string()),
                KeyValue::new(CONVERSATION, a.conversation_id.to_string()),
                KeyValue::new(REQUEST_MODEL, a.model.to_string()),
                KeyValue::new(RUN_ID, a.run_id.to_string()),
                KeyValue::new(TENANT, a.tenant.to_string()),
            ])
            .start_with_context(tracer, parent);
        Self {
            cx: Some(parent.with_span(span)),
        }
    }

    /// A resumed run's span, in the trace stored with the run (a new trace without one).
    pub fn resume(traceparent: Option<&str>, a: &AgentAttrs) -> Self {
        if !super::enabled() {
            return Self::default();
        }
        let parent = traceparent
            .map(propagation::from_traceparent)
            .unwrap_or_default();
        Self::start(&parent, a)
    }

    /// The context to run the run's work in (the current one while tracing is off).
    pub fn context(&self) -> Context {
        self.cx.clone().unwrap_or_else(Context::current)
    }

    /// The trace id (32 hex digits) while tracing is on.
    pub fn trace_id(&self) -> Option<String> {
        let cx = self.cx.as_ref()?;
        let sc = cx.span().span_context().clone();
        sc.is_valid().then(|| sc.trace_id().to_string())
    }

    /// The run's span as a `traceparent`, stored with the run so a resumed run continues it.
    pub fn traceparent(&self) -> Option<String> {
        propagation::traceparent(self.cx.as_ref()?)
    }

    /// `fut` with this trace as the current context (unchanged while tracing is off), so the
    /// spans it opens are children of the run's and its outgoing requests carry the trace.
    pub fn scope<F: Future>(&self, fut: F) -> impl Future<Output = F::Output> {
        within(self.cx.as_ref(), fut)
    }

    /// The run turned out to be a DAG run: `invoke_workflow`.
    pub fn workflow(&self) {
        if let Some(cx) = &self.cx {
            let span = cx.span();
            span.update_name("invoke_workflow");
            span.set_attribute(KeyValue::new(OPERATION, "invoke_workflow"));
        }
    }

    /// Records how the run ended and ends its span.
    pub fn finish(&self, end: &RunEnd) {
        let Some(cx) = &self.cx else { return };
        let span = cx.span();
        span.set_attributes(end.tokens.attributes());
        span.set_attributes([
            KeyValue::new("reagent.run.status", end.status.to_string()),
            KeyValue::new("reagent.run.iterations", i64::from(end.iterations)),
            KeyValue::new("reagent.run.tool_calls", i64::from(end.tool_calls)),
        ]);
        if end.status == "failed" || end.status == "cancelled" {
            fail(cx, end.status, end.error);
        }
        span.end();
    }
}

/// The current run turned out to be a DAG run: its span is `invoke_workflow`.
pub fn current_is_workflow() {
    if super::enabled() {
        RunTrace {
            cx: Some(Context::current()),
        }
        .workflow();
    }
}

/// `fut` with `cx` as the current context, or as it is without one (tracing off).
fn within<F: Future>(cx: Option<&Context>, fut: F) -> impl Future<Output = F::Output> {
    match cx {
        Some(cx) => Either::Left(fut.with_context(cx.clone())),
        None => Either::Right(fut),
    }
}

/// An internal span `name` with `kv` under the current context: the context that holds it.
fn internal(tracer: &SdkTracer, name: String, kv: Vec<KeyValue>) -> Context {
    let parent = Context::current();
    let span = tracer
        .span_builder(name)
        .with_kind(SpanKind::Internal)
        .with_attributes(kv)
        .start_with_context(tracer, &parent);
    parent.with_span(span)
}

/// A child span of the current context (`plan`, a DAG step's `invoke_agent`), ended by
/// [`Child::end`] or when dropped.
#[derive(Debug, Default)]
pub struct Child {
    cx: Option<Context>,
}

impl Child {
    /// `name` with `gen_ai.operation.name` = `operation`, under the current span.
    pub fn start(name: String, operation: &'static str, attrs: Vec<KeyValue>) -> Self {
        let Some(tracer) = super::tracer() else {
            return Self::default();
        };
        let mut kv = vec![KeyValue::new(OPERATION, operation)];
        kv.extend(attrs);
        Self {
            cx: Some(internal(tracer, name, kv)),
        }
    }

    /// `fut` inside this span.
    pub fn scope<F: Future>(&self, fut: F) -> impl Future<Output = F::Output> {
        within(self.cx.as_ref(), fut)
    }

    /// Ends the span, failed with `error` when there is one.
    pub fn end(self, error: Option<&str>) {
        let Some(cx) = &self.cx else { return };
        if let Some(e) = error {
            fail(cx, "error", Some(e));
        }
        cx.span().end();
    }
}
