//! The OpenAI-compatible chat client: one [`OpenAiClient`] per model, speaking
//! `POST {base_url}/chat/completions` with reqwest.
//!
//! Provider JSON stays private to this file, `openai_wire.rs` and [`super::stream`] (the chunk
//! decoder): callers only see [`ChatRequest`], [`ChatResponse`] and [`StreamEvent`]. Reading is
//! lenient (every field optional, `null` accepted) because compatible servers deviate in
//! harmless ways.
//!
//! Failure handling (docs/configuration.md `LLM_TIMEOUT_S`, `LLM_MAX_RETRIES`):
//! - 429/500/502/503/504, connection errors and timeouts are retried up to `max_retries` times with
//!   [`Backoff`] (honouring `Retry-After`); other statuses never are.
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
//!   compact and retry; every other status is [`LlmError::Status`] with a ≤ 300-char excerpt.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use reqwest::header::{HeaderMap, ACCEPT, CONTENT_TYPE};
use serde_json::Value;

use super::openai_wire::{parse_completion, request_body};
use super::retry::{parse_retry_after, Backoff};
use super::stream::excerpt;
use super::{
    Abilities, ChatRequest, ChatResponse, ChatStream, Llm, LlmError, Sampling, StreamEvent,
};
use streaming::StreamState;

/// A stream may last at most this many times the per-call timeout in total.
pub const STREAM_TOTAL_FACTOR: u32 = 4;

/// The default cap on one response's size.
pub use crate::domain::DEFAULT_LLM_MAX_RESPONSE_BYTES as DEFAULT_MAX_RESPONSE_BYTES;

/// Everything needed to talk to one model of one OpenAI-compatible provider.
#[derive(Clone, Debug)]
pub struct OpenAiConfig {
    /// e.g. `https://api.openai.com/v1` (no trailing `/chat/completions`).
    pub base_url: String,
    pub api_key: Option<String>,
    pub model: String,
    pub abilities: Abilities,
    pub context_window: u32,
    pub max_output_tokens: u32,
    /// Per-call timeout (`LLM_TIMEOUT_S`).
    pub timeout: Duration,
    /// Retries on 429/5xx/connect errors/timeouts (`LLM_MAX_RETRIES`).
    pub max_retries: u32,
}

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

pub struct OpenAiClient {
    cfg: OpenAiConfig,
    shared: Arc<Shared>,
    /// `[[models]] synthesis`: runs on this model end with a synthesis call.
    synthesis: bool,
    /// `[[models]] temperature`, `top_p`, `seed`: filled into requests that leave them unset.
    sampling: Sampling,
}

/// What an in-flight stream needs after `stream_chat` returned (it outlives `&self`).
#[derive(Clone)]
struct Shared {
    /// The model's registry name: the [`Continuity`](super::Continuity) of its replies is
    /// stamped with it, and only continuity stamped with it is sent back.
    name: String,
    http: reqwest::Client,
    url: String,
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

impl OpenAiClient {
    pub fn new(cfg: OpenAiConfig) -> Result<Self, LlmError> {
        url::Url::parse(&cfg.base_url)
            .map_err(|e| LlmError::Connect(format!("invalid base URL {:?}: {e}", cfg.base_url)))?;
        let http = http_client(cfg.timeout, Version::Http1)?;
        let shared = Shared {
            name: cfg.model.clone(),
            http,
            url: format!("{}/chat/completions", cfg.base_url.trim_end_matches('/')),
            api_key: cfg.api_key.clone().filter(|k| !k.is_empty()),
            timeout: cfg.timeout,
            max_retries: cfg.max_retries,
            backoff: Backoff::default(),
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
        };
        Ok(Self {
            cfg,
            shared: Arc::new(shared),
            synthesis: true,
            sampling: Sampling::default(),
        })
    }

    /// The model's sampling settings, sent in each request that leaves them unset.
    pub fn with_sampling(mut self, sampling: Sampling) -> Self {
        self.sampling = sampling;
        self
    }

    /// Off for a model too small to synthesise: runs answer with the loop's draft.
    pub fn with_synthesis(mut self, on: bool) -> Self {
        self.synthesis = on;
        self
    }

    /// The model's registry name (the provider's model name until set): what a reply's
    /// continuity is kept under, and replayed to.
    pub fn with_name(mut self, name: &str) -> Self {
        Arc::make_mut(&mut self.shared).name = name.to_string();
        self
    }

    /// Replaces the backoff policy (tests use a millisecond base).
    pub fn with_backoff(mut self, backoff: Backoff) -> Self {
        Arc::make_mut(&mut self.shared).backoff = backoff;
        self
    }

    /// Caps the size of one response (`LLM_MAX_RESPONSE_BYTES`).
    pub fn with_max_response_bytes(mut self, bytes: usize) -> Self {
        Arc::make_mut(&mut self.shared).max_response_bytes = bytes.max(1);
        self
    }

    /// `LLM_HTTP2`: HTTP/2 to the provider, so concurrent calls multiplex over one connection:
    /// with prior knowledge (h2c) for an `http://` base URL, by ALPN for `https://`.
    pub fn with_http2(mut self, on: bool) -> Result<Self, LlmError> {
        let plain = url::Url::parse(&self.cfg.base_url).is_ok_and(|u| u.scheme() == "http");
        let version = match (on, plain) {
            (false, _) => Version::Http1,
            (true, true) => Version::PriorKnowledge,
            (true, false) => Version::Negotiate,
        };
        Arc::make_mut(&mut self.shared).http = http_client(self.cfg.timeout, version)?;
        Ok(self)
    }

    /// The full URL requests go to.
    pub fn endpoint(&self) -> &str {
        &self.shared.url
    }

    fn body(&self, request: &ChatRequest, stream: bool) -> Result<bytes::Bytes, LlmError> {
        let request = request.clone().with_sampling(self.sampling);
        let body = request_body(&self.cfg.model, &self.shared.name, &request, stream);
        serde_json::to_vec(&body)
            .map(bytes::Bytes::from)
            .map_err(|e| LlmError::InvalidResponse(format!("cannot encode the request: {e}")))
    }

    async fn chat_once(&self, body: bytes::Bytes) -> Result<ChatResponse, Failure> {
        let response = self.shared.send(body, false).await?;
        let bytes = self.shared.read_body(response).await?;
        parse_completion(&bytes, &self.shared.name).map_err(Failure::from)
    }
}

impl Shared {
    /// Sends one attempt; a non-2xx status becomes a classified [`Failure`].
    async fn send(&self, body: bytes::Bytes, stream: bool) -> Result<reqwest::Response, Failure> {
        let accept = if stream {
            "text/event-stream"
        } else {
            "application/json"
        };
        let mut builder = self
            .http
            .post(&self.url)
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, accept)
            .body(body);
        if let Some(key) = &self.api_key {
            builder = builder.bearer_auth(key);
        }
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
            error: classify_status(status.as_u16(), &text),
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

#[async_trait]
impl Llm for OpenAiClient {
    fn model(&self) -> &str {
        &self.cfg.model
    }
    fn abilities(&self) -> Abilities {
        self.cfg.abilities
    }
    fn context_window(&self) -> u32 {
        self.cfg.context_window
    }
    fn max_output_tokens(&self) -> u32 {
        self.cfg.max_output_tokens
    }
    fn synthesis(&self) -> bool {
        self.synthesis
    }

    async fn chat(&self, request: ChatRequest) -> Result<ChatResponse, LlmError> {
        let body = self.body(&request, false)?;
        let mut retry = 0;
        loop {
            let attempt = tokio::time::timeout(self.shared.timeout, self.chat_once(body.clone()));
            let failure = match attempt.await {
                Ok(Ok(response)) => return Ok(response),
                Ok(Err(failure)) => failure,
                Err(_) => Failure::from(LlmError::Timeout(ceil_secs(self.shared.timeout))),
            };
            let retryable = failure.error.is_retryable();
            if !self
                .shared
                .wait_before_retry(retry, &failure, retryable)
                .await
            {
                return Err(failure.error);
            }
            retry += 1;
        }
    }

    async fn stream_chat(&self, request: ChatRequest) -> Result<ChatStream, LlmError> {
        let body = self.body(&request, true)?;
        let mut state = StreamState::new(Arc::clone(&self.shared), body);
        state.connect().await?;
        Ok(Box::pin(futures::stream::unfold(
            state,
            |mut st| async move { st.next_event().await.map(|item| (item, st)) },
        )))
    }
}

/// Body fragments by which OpenAI and compatible servers (vLLM, llama.cpp, Anthropic-style
/// gateways, OpenRouter...) say the prompt does not fit.
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

/// A non-2xx status and its body as a typed error.
fn classify_status(status: u16, body: &str) -> LlmError {
    let lower = body.to_lowercase();
    // A 429 talks about tokens per minute, not about the prompt size.
    if status != 429 && CONTEXT_MARKERS.iter().any(|m| lower.contains(m)) {
        let message = serde_json::from_str::<Value>(body)
            .ok()
            .and_then(|v| {
                let m = v.pointer("/error/message").or_else(|| v.get("message"))?;
                m.as_str().map(str::to_string)
            })
            .unwrap_or_else(|| body.to_string());
        return LlmError::ContextLengthExceeded(excerpt(&message));
    }
    LlmError::Status {
        status,
        body: excerpt(body),
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
