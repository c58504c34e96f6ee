//! W3C trace context in and out: [`adopt`] makes an incoming `traceparent` the parent of what
//! the request starts (a layer over the whole router, so every route has it); [`inject`] puts
//! the current span's `traceparent` on an outgoing request (providers, HTTP tools, webhooks,
//! MCP over HTTP). Both do nothing while tracing is off.

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use opentelemetry::context::FutureExt as _;
use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use opentelemetry::trace::TraceContextExt;
use opentelemetry::Context;
use opentelemetry_sdk::propagation::TraceContextPropagator;

struct Headers<'a>(&'a axum::http::HeaderMap);

impl Extractor for Headers<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }
    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(|k| k.as_str()).collect()
    }
}

struct Pairs(Vec<(String, String)>);

impl Injector for Pairs {
    fn set(&mut self, key: &str, value: String) {
        self.0.push((key.to_string(), value));
    }
}

struct One<'a>(Option<&'a str>);

impl Extractor for One<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        (key == "traceparent").then_some(self.0).flatten()
    }
    fn keys(&self) -> Vec<&str> {
        vec!["traceparent"]
    }
}

/// The context an incoming request's `traceparent` (and `tracestate`) names; the current one
/// when it names none or is malformed.
pub fn extract(headers: &axum::http::HeaderMap) -> Context {
    TraceContextPropagator::new().extract(&Headers(headers))
}

/// The context a stored `traceparent` names (a resumed run's), as a remote parent.
pub fn from_traceparent(traceparent: &str) -> Context {
    TraceContextPropagator::new().extract_with_context(&Context::new(), &One(Some(traceparent)))
}

/// `cx`'s span as a `traceparent` value; `None` without a valid span.
pub fn traceparent(cx: &Context) -> Option<String> {
    if !cx.span().span_context().is_valid() {
        return None;
    }
    let mut pairs = Pairs(Vec::new());
    TraceContextPropagator::new().inject_context(cx, &mut pairs);
    pairs
        .0
        .into_iter()
        .find_map(|(k, v)| (k == "traceparent").then_some(v))
}

/// The current span's `traceparent`, while tracing is on (for requests sent elsewhere).
pub fn current_traceparent() -> Option<String> {
    if !super::enabled() {
        return None;
    }
    traceparent(&Context::current())
}

/// The current span's trace headers on an outgoing request.
pub fn inject(request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
    if !super::enabled() {
        return request;
    }
    let mut pairs = Pairs(Vec::new());
    TraceContextPropagator::new().inject_context(&Context::current(), &mut pairs);
    pairs
        .0
        .into_iter()
        .fold(request, |r, (k, v)| r.header(k, v))
}

/// Middleware: the request is handled inside the context its `traceparent` names, so a run it
/// starts joins the caller's trace.
pub async fn adopt(request: Request, next: Next) -> Response {
    if !super::enabled() || !request.headers().contains_key("traceparent") {
        return next.run(request).await;
    }
    let cx = extract(request.headers());
    next.run(request).with_context(cx).await
}
