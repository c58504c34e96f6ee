//! A model call's `chat {model}` span and a tool call's `execute_tool {tool}` span.

use std::borrow::Cow;
use std::future::Future;

use opentelemetry::trace::{SpanKind, TraceContextExt, Tracer as _};
use opentelemetry::{Array, Context, KeyValue, StringValue, Value};

use super::{
    fail, internal, within, Tokens, FINISH_REASONS, MAX_TOKENS, OPERATION, PROVIDER, REQUEST_MODEL,
    RESPONSE_MODEL, SERVER_ADDRESS, SERVER_PORT, TEMPERATURE, TOOL_ARGUMENTS, TOOL_CALL_ID,
    TOOL_DESCRIPTION, TOOL_NAME, TOOL_RESULT, TOOL_TYPE, TOP_P,
};
use crate::telemetry::call_kind::CALL_KIND;

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
        let tracer = crate::telemetry::tracer()?;
        let parent = Context::current();
        let mut kv = vec![
            KeyValue::new(OPERATION, "chat"),
            KeyValue::new(PROVIDER, a.provider.to_string()),
            KeyValue::new(REQUEST_MODEL, a.model.to_string()),
            KeyValue::new("gen_ai.request.stream", a.streamed),
        ];
        if let Some(kind) = parent.get::<crate::telemetry::CallKind>() {
            kv.push(KeyValue::new(CALL_KIND, kind.as_str()));
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
        let Some(tracer) = crate::telemetry::tracer() else {
            return Self::default();
        };
        let mut kv = vec![
            KeyValue::new(OPERATION, "execute_tool"),
            KeyValue::new(TOOL_NAME, tool.to_string()),
            KeyValue::new(TOOL_CALL_ID, call_id.to_string()),
            KeyValue::new(TOOL_TYPE, "function"),
            KeyValue::new(TOOL_DESCRIPTION, first_line(description).into_owned()),
        ];
        if let Some(args) = arguments.filter(|_| crate::telemetry::capture_content()) {
            kv.push(KeyValue::new(TOOL_ARGUMENTS, args.to_string()));
        }
        Self {
            cx: Some(internal(tracer, format!("execute_tool {tool}"), kv)),
        }
    }

    /// `fut` inside this span (an HTTP tool's request carries it as `traceparent`).
    pub fn scope<F: Future>(&self, fut: F) -> impl Future<Output = F::Output> {
        within(self.cx.as_ref(), fut)
    }

    /// Ends the span with the call's result (`error` when the observation is an error).
    pub fn end(self, observation: &str, error: bool) {
        let Some(cx) = &self.cx else { return };
        if crate::telemetry::capture_content() {
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
