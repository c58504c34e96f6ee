//! [`TracedLlm`]: a `chat {model}` span (telemetry) around every call of the model it wraps,
//! wrapped only while tracing is on. A streamed call's span ends with the stream (its `done`,
//! its error, or its drop as cancelled), not with the first byte; the provider request is sent
//! inside the span, so it carries the span as `traceparent`.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};

use async_trait::async_trait;
use futures::{Stream, StreamExt};
use opentelemetry::context::FutureExt as _;
use serde_json::{json, Value};

use super::{
    Abilities, ChatRequest, ChatResponse, ChatStream, Llm, LlmError, Message, Role, StreamEvent,
    Usage,
};
use crate::telemetry::spans::{ChatAttrs, ChatEnd, Tokens, INPUT_MESSAGES, OUTPUT_MESSAGES};
use crate::telemetry::{self, ChatSpan};

/// Traces the calls of the model it wraps.
pub struct TracedLlm {
    inner: Arc<dyn Llm>,
    provider: String,
    server: Option<(String, u16)>,
}

impl TracedLlm {
    /// `inner`, whose endpoint is `base_url` (provider and server attributes come from it).
    pub fn new(inner: Arc<dyn Llm>, base_url: &str) -> Self {
        let url = url::Url::parse(base_url).ok();
        let server = url.as_ref().and_then(|u| {
            let host = u.host_str()?.to_string();
            Some((host, u.port_or_known_default()?))
        });
        let provider = server
            .as_ref()
            .map(|(host, _)| telemetry::spans::provider_name(host))
            .unwrap_or_else(|| "openai".to_string());
        Self {
            inner,
            provider,
            server,
        }
    }

    fn span(&self, request: &ChatRequest, streamed: bool) -> Option<ChatSpan> {
        let span = ChatSpan::start(&ChatAttrs {
            provider: &self.provider,
            model: self.inner.model(),
            server: self.server.as_ref().map(|(h, p)| (h.as_str(), *p)),
            max_tokens: request.max_tokens,
            temperature: request.temperature,
            top_p: request.top_p,
            streamed,
        })?;
        if telemetry::capture_content() {
            span.content(INPUT_MESSAGES, input_messages(&request.messages));
        }
        Some(span)
    }
}

/// The token counts as the conventions name them; the cache counts when the provider reported
/// any (0 means it said nothing).
pub fn tokens(usage: &Usage) -> Tokens {
    let some = |n: u64| (n > 0).then_some(n);
    Tokens {
        input: usage.prompt_tokens,
        output: usage.completion_tokens,
        cache_read: some(usage.cache_read_tokens),
        cache_write: some(usage.cache_write_tokens),
    }
}

/// A short class of the failure for `error.type`: the HTTP status, else the kind.
fn error_type(e: &LlmError) -> String {
    match e {
        LlmError::Status { status, .. } => status.to_string(),
        LlmError::ContextLengthExceeded(_) => "context_length_exceeded".into(),
        LlmError::Timeout(_) => "timeout".into(),
        LlmError::Connect(_) => "connect".into(),
        LlmError::Stream(_) => "stream".into(),
        LlmError::InvalidResponse(_) => "invalid_response".into(),
        LlmError::Cancelled => "cancelled".into(),
        LlmError::BudgetExceeded(_) => "budget_exceeded".into(),
    }
}

fn role(r: Role) -> &'static str {
    match r {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    }
}

/// `gen_ai.input.messages`: role and parts (text, tool calls, tool results) per message.
fn input_messages(messages: &[Message]) -> String {
    let list: Vec<Value> = messages
        .iter()
        .map(|m| {
            let mut parts = Vec::new();
            match &m.tool_call_id {
                Some(id) => parts.push(
                    json!({"type": "tool_call_response", "id": id, "response": m.content}),
                ),
                None if !m.content.is_empty() => {
                    parts.push(json!({"type": "text", "content": m.content}))
                }
                None => {}
            }
            for c in &m.tool_calls {
                parts.push(json!({"type": "tool_call", "id": c.id, "name": c.name, "arguments": c.arguments}));
            }
            json!({"role": role(m.role), "parts": parts})
        })
        .collect();
    Value::Array(list).to_string()
}

/// `gen_ai.output.messages` of a reply.
fn output_messages(content: &str, finish_reason: Option<&str>) -> String {
    json!([{"role": "assistant", "parts": [{"type": "text", "content": content}],
        "finish_reason": finish_reason.unwrap_or("stop")}])
    .to_string()
}

#[async_trait]
impl Llm for TracedLlm {
    super::forward_llm_description!(inner);

    async fn chat(&self, request: ChatRequest) -> Result<ChatResponse, LlmError> {
        let Some(span) = self.span(&request, false) else {
            return self.inner.chat(request).await;
        };
        let cx = span.context().clone();
        match self.inner.chat(request).with_context(cx).await {
            Ok(r) => {
                if telemetry::capture_content() {
                    let out = output_messages(&r.content, r.finish_reason.as_deref());
                    span.content(OUTPUT_MESSAGES, out);
                }
                let end = ChatEnd {
                    tokens: tokens(&r.usage),
                    finish_reason: r.finish_reason.as_deref(),
                };
                span.finish(&end, self.inner.model());
                Ok(r)
            }
            Err(e) => {
                span.fail(&error_type(&e), &e.to_string());
                Err(e)
            }
        }
    }

    async fn stream_chat(&self, request: ChatRequest) -> Result<ChatStream, LlmError> {
        let Some(span) = self.span(&request, true) else {
            return self.inner.stream_chat(request).await;
        };
        let cx = span.context().clone();
        match self.inner.stream_chat(request).with_context(cx).await {
            Ok(inner) => Ok(Box::pin(TracedStream {
                inner,
                span: Some(span),
                usage: Usage::default(),
                text: telemetry::capture_content().then(String::new),
                model: self.inner.model().to_string(),
            })),
            Err(e) => {
                span.fail(&error_type(&e), &e.to_string());
                Err(e)
            }
        }
    }
}

/// A reply stream whose span ends with it.
struct TracedStream {
    inner: ChatStream,
    span: Option<ChatSpan>,
    usage: Usage,
    /// The answer's text, kept only with content capture on.
    text: Option<String>,
    model: String,
}

impl TracedStream {
    fn observe(&mut self, event: &StreamEvent) {
        match event {
            StreamEvent::Content(c) => {
                if let Some(t) = &mut self.text {
                    t.push_str(c);
                }
            }
            StreamEvent::Usage(u) => self.usage = *u,
            StreamEvent::Done { finish_reason } => {
                let Some(span) = self.span.take() else { return };
                if let Some(t) = &self.text {
                    span.content(
                        OUTPUT_MESSAGES,
                        output_messages(t, finish_reason.as_deref()),
                    );
                }
                let end = ChatEnd {
                    tokens: tokens(&self.usage),
                    finish_reason: finish_reason.as_deref(),
                };
                span.finish(&end, &self.model);
            }
            _ => {}
        }
    }
}

impl Stream for TracedStream {
    type Item = Result<StreamEvent, LlmError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<Self::Item>> {
        let polled = self.inner.poll_next_unpin(cx);
        match &polled {
            Poll::Ready(Some(Ok(event))) => self.observe(event),
            Poll::Ready(Some(Err(e))) => {
                if let Some(span) = self.span.take() {
                    span.fail(&error_type(e), &e.to_string());
                }
            }
            Poll::Ready(None) => {
                if let Some(span) = self.span.take() {
                    let end = ChatEnd {
                        tokens: tokens(&self.usage),
                        finish_reason: None,
                    };
                    span.finish(&end, &self.model);
                }
            }
            Poll::Pending => {}
        }
        polled
    }
}
