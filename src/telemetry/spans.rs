//! The spans of a run, named and attributed as the OpenTelemetry GenAI semantic conventions
//! [`SEMCONV_VERSION`](super::SEMCONV_VERSION) say: `invoke_agent {agent}` per run (or per DAG
//! step; `invoke_workflow` for a DAG run, with a `plan` span per planner call), `chat {model}`
//! per model call, `execute_tool {tool}` per tool call. Every constructor returns nothing to
//! record while tracing is off.

use std::borrow::Cow;
use std::future::Future;

use futures::future::Either;
use opentelemetry::context::FutureExt as _;
use opentelemetry::trace::{SpanKind, Status, TraceContextExt, Tracer as _};
use opentelemetry::{Array, Context, KeyValue, StringValue, Value};

use super::propagation;

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
        match &self.cx {
            Some(cx) => Either::Left(fut.with_context(cx.clone())),
            None => Either::Right(fut),
        }
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
        let parent = Context::current();
        let mut kv = vec![KeyValue::new(OPERATION, operation)];
        kv.extend(attrs);
        let span = tracer
            .span_builder(name)
            .with_kind(SpanKind::Internal)
            .with_attributes(kv)
            .start_with_context(tracer, &parent);
        Self {
            cx: Some(parent.with_span(span)),
        }
    }

    /// `fut` inside this span.
    pub fn scope<F: Future>(&self, fut: F) -> impl Future<Output = F::Output> {
        match &self.cx {
            Some(cx) => Either::Left(fut.with_context(cx.clone())),
            None => Either::Right(fut),
        }
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

/// What a `chat` span is about, known when the call starts.
#[derive(Clone, Debug, Default)]
pub struct ChatAttrs<'a> {
    pub provider: &'a str,
    pub model: &'a str,
    pub server: Option<(&'a str, u16)>,
    pub max_tokens: Option<u32>,
    pub temperature: Option<f32>,
    pub top_p: Option<f32>,
    pub streamed: bool,
}

/// What a call returned, for its span.
#[derive(Clone, Debug, Default)]
pub struct ChatEnd<'a> {
    pub tokens: Tokens,
    pub finish_reason: Option<&'a str>,
}

/// One model call's span; ended when the call (or its stream) ends: by [`ChatSpan::finish`],
/// [`ChatSpan::fail`], or as cancelled when dropped before either.
#[derive(Debug)]
pub struct ChatSpan {
    cx: Context,
    ended: bool,
}

impl ChatSpan {
    /// A `chat {model}` span under the current context; `None` while tracing is off.
    pub fn start(a: &ChatAttrs) -> Option<Self> {
        let tracer = super::tracer()?;
        let parent = Context::current();
        let mut kv = vec![
            KeyValue::new(OPERATION, "chat"),
            KeyValue::new(PROVIDER, a.provider.to_string()),
            KeyValue::new(REQUEST_MODEL, a.model.to_string()),
            KeyValue::new("gen_ai.request.stream", a.streamed),
        ];
        if let Some(kind) = parent.get::<super::CallKind>() {
            kv.push(KeyValue::new(super::call_kind::CALL_KIND, kind.as_str()));
        }
        if let Some((host, port)) = a.server {
            kv.push(KeyValue::new(SERVER_ADDRESS, host.to_string()));
            kv.push(KeyValue::new(SERVER_PORT, i64::from(port)));
        }
        if let Some(n) = a.max_tokens {
            kv.push(KeyValue::new(MAX_TOKENS, i64::from(n)));
        }
        if let Some(t) = a.temperature {
            kv.push(KeyValue::new(TEMPERATURE, f64::from(t)));
        }
        if let Some(p) = a.top_p {
            kv.push(KeyValue::new(TOP_P, f64::from(p)));
        }
        let span = tracer
            .span_builder(format!("chat {}", a.model))
            .with_kind(SpanKind::Client)
            .with_attributes(kv)
            .start_with_context(tracer, &parent);
        Some(Self {
            cx: parent.with_span(span),
            ended: false,
        })
    }

    /// The context of this span: the provider request is sent inside it.
    pub fn context(&self) -> &Context {
        &self.cx
    }

    /// Sets a content attribute (only called with capture on).
    pub fn content(&self, key: &'static str, json: String) {
        self.cx.span().set_attribute(KeyValue::new(key, json));
    }

    /// The call succeeded.
    pub fn finish(mut self, end: &ChatEnd, response_model: &str) {
        let span = self.cx.span();
        span.set_attributes(end.tokens.attributes());
        span.set_attribute(KeyValue::new(RESPONSE_MODEL, response_model.to_string()));
        if let Some(reason) = end.finish_reason {
            let reasons: Vec<StringValue> = vec![reason.to_string().into()];
            span.set_attribute(KeyValue::new(
                FINISH_REASONS,
                Value::Array(Array::String(reasons)),
            ));
        }
        span.end();
        self.ended = true;
    }

    /// The call failed: `error_type` is a short class (`http_429`, `timeout`, …).
    pub fn fail(mut self, error_type: &str, message: &str) {
        fail(&self.cx, error_type, Some(message));
        self.cx.span().end();
        self.ended = true;
    }
}

impl Drop for ChatSpan {
    fn drop(&mut self) {
        if !self.ended {
            fail(&self.cx, "cancelled", None);
            self.cx.span().end();
        }
    }
}

/// One tool call's span.
#[derive(Debug, Default)]
pub struct ToolSpan {
    cx: Option<Context>,
}

impl ToolSpan {
    /// An `execute_tool {tool}` span under the current context.
    pub fn start(tool: &str, call_id: &str, description: &str, arguments: Option<&str>) -> Self {
        let Some(tracer) = super::tracer() else {
            return Self::default();
        };
        let parent = Context::current();
        let mut kv = vec![
            KeyValue::new(OPERATION, "execute_tool"),
            KeyValue::new(TOOL_NAME, tool.to_string()),
            KeyValue::new(TOOL_CALL_ID, call_id.to_string()),
            KeyValue::new(TOOL_TYPE, "function"),
            KeyValue::new(TOOL_DESCRIPTION, first_line(description).into_owned()),
        ];
        if let Some(args) = arguments.filter(|_| super::capture_content()) {
            kv.push(KeyValue::new(TOOL_ARGUMENTS, args.to_string()));
        }
        let span = tracer
            .span_builder(format!("execute_tool {tool}"))
            .with_kind(SpanKind::Internal)
            .with_attributes(kv)
            .start_with_context(tracer, &parent);
        Self {
            cx: Some(parent.with_span(span)),
        }
    }

    /// `fut` inside this span (an HTTP tool's request carries it as `traceparent`).
    pub fn scope<F: Future>(&self, fut: F) -> impl Future<Output = F::Output> {
        match &self.cx {
            Some(cx) => Either::Left(fut.with_context(cx.clone())),
            None => Either::Right(fut),
        }
    }

    /// Ends the span with the call's result (`error` when the observation is an error).
    pub fn end(self, observation: &str, error: bool) {
        let Some(cx) = &self.cx else { return };
        if super::capture_content() {
            cx.span()
                .set_attribute(KeyValue::new(TOOL_RESULT, observation.to_string()));
        }
        if error {
            fail(cx, "tool_error", Some(first_line(observation).as_ref()));
        }
        cx.span().end();
    }
}

fn first_line(text: &str) -> Cow<'_, str> {
    let line = text.lines().next().unwrap_or_default();
    match line.chars().count() > 200 {
        true => Cow::Owned(line.chars().take(200).collect()),
        false => Cow::Borrowed(line),
    }
}

/// The `gen_ai.provider.name` of an OpenAI-compatible endpoint: the well-known name of its
/// host, else the host itself (a custom value, as the conventions allow).
pub fn provider_name(host: &str) -> String {
    const KNOWN: [(&str, &str); 9] = [
        ("api.openai.com", "openai"),
        ("api.anthropic.com", "anthropic"),
        ("generativelanguage.googleapis.com", "gcp.gemini"),
        ("api.deepseek.com", "deepseek"),
        ("api.groq.com", "groq"),
        ("api.mistral.ai", "mistral_ai"),
        ("api.x.ai", "x_ai"),
        ("api.perplexity.ai", "perplexity"),
        ("openai.azure.com", "azure.ai.openai"),
    ];
    KNOWN
        .iter()
        .find(|(suffix, _)| host == *suffix || host.ends_with(&format!(".{suffix}")))
        .map(|(_, name)| name.to_string())
        .unwrap_or_else(|| host.to_string())
}
