//! The HTTP side of the model client: one [`Transport`] per model posts the encoded request to
//! the provider, retries, bounds the response and decodes it with its protocol's wire format
//! ([`Wire`]). The client (`client.rs`) only encodes requests and holds the model's settings.
//!
//! Failure handling (docs/configuration.md `LLM_TIMEOUT_S`, `LLM_MAX_RETRIES`):
//! - 429/500/502/503/504/529, connection errors and timeouts are retried up to `max_retries`
//!   times with [`Backoff`] (honouring `Retry-After`); other statuses never are.
//! - `timeout` bounds each whole non-streamed attempt. For a stream it bounds connecting (up to the
//!   response headers) and then every gap between two SSE events; the whole stream is also capped
//!   at [`STREAM_TOTAL_FACTOR`] × `timeout`, so an endless slow trickle still ends.
//! - A stream is retried only while nothing has been handed to the consumer (so a consumer never
//!   sees a chunk twice). Tool-call fragments are held until the end, so a tool-call reply cut
//!   mid-way is safely retried; a text reply cut after its first delta is a [`LlmError::Stream`].
//! - A response is capped at `max_response_bytes` (`LLM_MAX_RESPONSE_BYTES`, default
//!   [`DEFAULT_MAX_RESPONSE_BYTES`]): a larger non-streamed body is an
//!   [`LlmError::InvalidResponse`], a stream that sends more is cut with an [`LlmError::Stream`];
//!   neither is retried (the provider would send the same again). Memory stays bounded even
//!   when a provider sends one endless SSE event without a line break.
//! - "Context length exceeded" bodies become [`LlmError::ContextLengthExceeded`] so the engine can
//!   compact and retry; every other status is [`LlmError::Status`] with a ≤ 300-char excerpt (for
//!   Anthropic, its error's type and message rather than the JSON).

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{HeaderMap, ACCEPT, CONTENT_TYPE};
use serde_json::Value;

use super::providers::Wire;
use super::retry::{parse_retry_after, Backoff};
use super::stream::excerpt;
use super::{ChatResponse, ChatStream, LlmError, RequestBody};
use streaming::StreamState;

/// A stream may last at most this many times the per-call timeout in total.
pub const STREAM_TOTAL_FACTOR: u32 = 4;

/// The default cap on one response's size.
pub use crate::domain::DEFAULT_LLM_MAX_RESPONSE_BYTES as DEFAULT_MAX_RESPONSE_BYTES;

/// How the client picks its HTTP version (`LLM_HTTP2`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Version {
    /// HTTP/1.1 only, TLS included: one connection per concurrent call.
    Http1,
    /// `https://`: offer h2 by ALPN, HTTP/1.1 when the provider declines.
    Negotiate,
    /// `http://`: HTTP/2 from the first byte (h2c prior knowledge).
    PriorKnowledge,
}

/// The provider's connection pool. Off is HTTP/1.1 even over TLS: hyper's h2 pool never opens
/// a second connection, so past the provider's `SETTINGS_MAX_CONCURRENT_STREAMS` (often 100)
/// calls would queue, and the operator opts into that trade for the memory it saves.
fn http_client(connect_timeout: Duration, version: Version) -> Result<reqwest::Client, LlmError> {
    // The provider is an operator-declared endpoint too: its key and the conversation never
    // follow a redirect to another origin.
    let builder = reqwest::Client::builder()
        .connect_timeout(connect_timeout)
        .redirect(crate::net::same_origin_redirects());
    let builder = match version {
        Version::Http1 => builder.http1_only(),
        Version::Negotiate => builder,
        Version::PriorKnowledge => builder.http2_prior_knowledge(),
    };
    builder
        .build()
        .map_err(|e| LlmError::Connect(format!("cannot build the HTTP client: {e}")))
}

/// Everything a call needs to reach one model, shared by its in-flight streams.
#[derive(Clone)]
pub(super) struct Transport {
    /// The model's registry name: the [`Continuity`](super::Continuity) of its replies is
    /// stamped with it, and only continuity stamped with it is sent back.
    pub(super) name: String,
    wire: Arc<dyn Wire>,
    http: reqwest::Client,
    url: String,
    /// The base URL is `http://` (HTTP/2 then means h2c).
    plain: bool,
    api_key: Option<String>,
    timeout: Duration,
    max_retries: u32,
    backoff: Backoff,
    max_response_bytes: usize,
}

/// A failed attempt, with the provider's `Retry-After` when it sent one.
struct Failure {
    error: LlmError,
    retry_after: Option<Duration>,
}

impl From<LlmError> for Failure {
    fn from(error: LlmError) -> Self {
        Self {
            error,
            retry_after: None,
        }
    }
}

impl Transport {
    /// A transport posting to `{base_url}{path}`.
    pub(super) fn new(
        wire: Arc<dyn Wire>,
        base_url: &str,
        path: &str,
        api_key: Option<String>,
        timeout: Duration,
        max_retries: u32,
    ) -> Result<Self, LlmError> {
        let parsed = url::Url::parse(base_url)
            .map_err(|e| LlmError::Connect(format!("invalid base URL {base_url:?}: {e}")))?;
        Ok(Self {
            name: String::new(),
            wire,
            http: http_client(timeout, Version::Http1)?,
            url: format!("{}{path}", base_url.trim_end_matches('/')),
            plain: parsed.scheme() == "http",
            api_key: api_key.filter(|k| !k.is_empty()),
            timeout,
            max_retries,
            backoff: Backoff::default(),
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
        })
    }

    pub(super) fn set_backoff(&mut self, backoff: Backoff) {
        self.backoff = backoff;
    }

    pub(super) fn set_max_response_bytes(&mut self, bytes: usize) {
        self.max_response_bytes = bytes.max(1);
    }

    /// `LLM_HTTP2`: HTTP/2 to the provider, so concurrent calls multiplex over one connection:
    /// with prior knowledge (h2c) for an `http://` base URL, by ALPN for `https://`.
    pub(super) fn set_http2(&mut self, on: bool) -> Result<(), LlmError> {
        let version = match (on, self.plain) {
            (false, _) => Version::Http1,
            (true, true) => Version::PriorKnowledge,
            (true, false) => Version::Negotiate,
        };
        self.http = http_client(self.timeout, version)?;
        Ok(())
    }

    /// The full URL requests go to.
    pub(super) fn url(&self) -> &str {
        &self.url
    }

    /// A non-streamed reply's body decoded as [`Self::chat`] decodes it.
    pub(super) fn parse(&self, bytes: &[u8]) -> Result<ChatResponse, LlmError> {
        self.wire.parse(bytes, &self.name)
    }

    /// One non-streamed call, retried as the module docs say.
    pub(super) async fn chat(&self, body: RequestBody) -> Result<ChatResponse, LlmError> {
        let mut retry = 0;
        loop {
            let attempt = tokio::time::timeout(self.timeout, self.chat_once(body.clone()));
            let failure = match attempt.await {
                Ok(Ok(response)) => return Ok(response),
                Ok(Err(failure)) => failure,
                Err(_) => Failure::from(LlmError::Timeout(ceil_secs(self.timeout))),
            };
            let retryable = failure.error.is_retryable();
            if !self.wait_before_retry(retry, &failure, retryable).await {
                return Err(failure.error);
            }
            retry += 1;
        }
    }

    /// One streamed call: connected (with retries) before it returns.
    pub(super) async fn stream(
        self: &Arc<Self>,
        body: RequestBody,
    ) -> Result<ChatStream, LlmError> {
        let mut state = StreamState::new(Arc::clone(self), body);
        state.connect().await?;
        Ok(Box::pin(futures::stream::unfold(
            state,
            |mut st| async move { st.next_event().await.map(|item| (item, st)) },
        )))
    }

    async fn chat_once(&self, body: RequestBody) -> Result<ChatResponse, Failure> {
        let response = self.send(body, false).await?;
        let bytes = self.read_body(response).await?;
        self.parse(&bytes).map_err(Failure::from)
    }

    /// Sends one attempt; a non-2xx status becomes a classified [`Failure`].
    async fn send(&self, body: RequestBody, stream: bool) -> Result<reqwest::Response, Failure> {
        let accept = if stream {
            "text/event-stream"
        } else {
            "application/json"
        };
        let builder = self
            .http
            .post(&self.url)
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, accept)
            .body(body.reqwest());
        let builder = self.wire.authorize(builder, self.api_key.as_deref());
        let response = crate::telemetry::propagation::inject(builder)
            .send()
            .await
            .map_err(|e| transport_error(&e, self.timeout))?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let retry_after = retry_after(response.headers());
        // Capped: a provider's error body can be hundreds of MB, and a message is a few KB.
        let body = crate::net::read_prefix(response, crate::net::MAX_ERROR_BODY_BYTES).await;
        let text = String::from_utf8_lossy(&body);
        Err(Failure {
            error: classify_status(&*self.wire, status.as_u16(), &text),
            retry_after,
        })
    }

    /// Reads a whole body, refusing more than `max_response_bytes`.
    async fn read_body(&self, mut response: reqwest::Response) -> Result<Vec<u8>, Failure> {
        let cap = self.max_response_bytes;
        if response.content_length().is_some_and(|n| n > cap as u64) {
            return Err(too_large(cap).into());
        }
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| transport_error(&e, self.timeout))?
        {
            if body.len() + chunk.len() > cap {
                return Err(too_large(cap).into());
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }

    /// Waits before retry number `retry` if `retryable` and retries are left; false means give up.
    async fn wait_before_retry(&self, retry: u32, failure: &Failure, retryable: bool) -> bool {
        if !retryable || retry >= self.max_retries {
            return false;
        }
        let delay = self.backoff.delay(retry, failure.retry_after);
        let status = match &failure.error {
            LlmError::Status { status, .. } => Some(*status),
            _ => None,
        };
        tracing::warn!(
            url = %self.url,
            status,
            attempt = retry + 1,
            max_retries = self.max_retries,
            delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
            error = %failure.error,
            "retrying LLM call"
        );
        tokio::time::sleep(delay).await;
        true
    }
}

/// Body fragments by which OpenAI and compatible servers (vLLM, llama.cpp, Anthropic,
/// OpenRouter...) say the prompt does not fit.
const CONTEXT_MARKERS: &[&str] = &[
    "context_length_exceeded",
    "maximum context length",
    "context length exceeded",
    "context window",
    "exceed_context_size",
    "exceeds the available context size",
    "too many tokens",
    "prompt is too long",
    "input is too long",
    "reduce the length of the messages",
];

/// The provider's own words in an error body: `error.message` (both protocols) or `message`.
fn provider_message(body: &str) -> Option<(Option<String>, String)> {
    let v = serde_json::from_str::<Value>(body).ok()?;
    let m = v.pointer("/error/message").or_else(|| v.get("message"))?;
    let kind = v
        .pointer("/error/type")
        .and_then(Value::as_str)
        .map(str::to_string);
    Some((kind, m.as_str()?.to_string()))
}

/// A non-2xx status and its body as a typed error.
fn classify_status(wire: &dyn Wire, status: u16, body: &str) -> LlmError {
    let lower = body.to_lowercase();
    let message = provider_message(body);
    // A 429 talks about tokens per minute, not about the prompt size.
    if status != 429 && CONTEXT_MARKERS.iter().any(|m| lower.contains(m)) {
        let text = message.map_or_else(|| body.to_string(), |(_, m)| m);
        return LlmError::ContextLengthExceeded(excerpt(&text));
    }
    let body = message
        .and_then(|(kind, text)| wire.error_text(kind.as_deref(), &text))
        .unwrap_or_else(|| body.to_string());
    LlmError::Status {
        status,
        body: excerpt(&body),
    }
}

/// `retry-after-ms` (OpenAI) or `Retry-After` (seconds or HTTP-date).
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(ms) = text("retry-after-ms").and_then(|v| v.trim().parse::<f64>().ok()) {
        if let Ok(d) = Duration::try_from_secs_f64(ms / 1000.0) {
            return Some(d);
        }
    }
    parse_retry_after(text("retry-after")?, std::time::SystemTime::now())
}

fn transport_error(e: &reqwest::Error, timeout: Duration) -> Failure {
    if e.is_timeout() {
        return LlmError::Timeout(ceil_secs(timeout)).into();
    }
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    LlmError::Connect(text).into()
}

/// The error for a response past `max_response_bytes`.
fn too_large(cap: usize) -> LlmError {
    LlmError::InvalidResponse(format!(
        "the response is larger than {cap} bytes (LLM_MAX_RESPONSE_BYTES)"
    ))
}

/// Whole seconds for [`LlmError::Timeout`], rounded up so a 500 ms timeout does not say "0 s".
fn ceil_secs(d: Duration) -> u64 {
    d.as_secs() + u64::from(d.subsec_nanos() > 0)
}

mod streaming;
#[cfg(test)]
mod tests;
