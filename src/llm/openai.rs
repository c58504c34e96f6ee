//! The OpenAI-compatible chat client: one [`OpenAiClient`] per model, speaking
//! `POST {base_url}/chat/completions` over the shared [`Transport`] (retries, timeouts, size
//! caps: see `transport.rs`).
//!
//! Provider JSON stays private to `openai_wire.rs` and [`super::stream`] (the chunk decoder):
//! callers only see [`ChatRequest`], [`ChatResponse`] and [`StreamEvent`](super::StreamEvent).
//! Reading is lenient (every field optional, `null` accepted) because compatible servers
//! deviate in harmless ways.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use super::openai_wire::request_body;
use super::retry::Backoff;
use super::transport::{Protocol, Transport};
use super::{Abilities, ChatRequest, ChatResponse, ChatStream, Llm, LlmError, Sampling};

pub use super::transport::{DEFAULT_MAX_RESPONSE_BYTES, STREAM_TOTAL_FACTOR};

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

pub struct OpenAiClient {
    cfg: OpenAiConfig,
    transport: Arc<Transport>,
    /// `[[models]] synthesis`: runs on this model end with a synthesis call.
    synthesis: bool,
    /// `[[models]] temperature`, `top_p`, `seed`: filled into requests that leave them unset.
    sampling: Sampling,
}

impl OpenAiClient {
    pub fn new(cfg: OpenAiConfig) -> Result<Self, LlmError> {
        let mut transport = Transport::new(
            Protocol::OpenAiChat,
            &cfg.base_url,
            "/chat/completions",
            cfg.api_key.clone(),
            cfg.timeout,
            cfg.max_retries,
        )?;
        transport.name = cfg.model.clone();
        Ok(Self {
            cfg,
            transport: Arc::new(transport),
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
        Arc::make_mut(&mut self.transport).name = name.to_string();
        self
    }

    /// Replaces the backoff policy (tests use a millisecond base).
    pub fn with_backoff(mut self, backoff: Backoff) -> Self {
        Arc::make_mut(&mut self.transport).set_backoff(backoff);
        self
    }

    /// Caps the size of one response (`LLM_MAX_RESPONSE_BYTES`).
    pub fn with_max_response_bytes(mut self, bytes: usize) -> Self {
        Arc::make_mut(&mut self.transport).set_max_response_bytes(bytes);
        self
    }

    /// `LLM_HTTP2`: HTTP/2 to the provider (see [`Transport::set_http2`]).
    pub fn with_http2(mut self, on: bool) -> Result<Self, LlmError> {
        Arc::make_mut(&mut self.transport).set_http2(on)?;
        Ok(self)
    }

    /// The full URL requests go to.
    pub fn endpoint(&self) -> &str {
        self.transport.url()
    }

    fn body(&self, request: &ChatRequest, stream: bool) -> Result<bytes::Bytes, LlmError> {
        let request = request.clone().with_sampling(self.sampling);
        let body = request_body(&self.cfg.model, &self.transport.name, &request, stream);
        serde_json::to_vec(&body)
            .map(bytes::Bytes::from)
            .map_err(|e| LlmError::InvalidResponse(format!("cannot encode the request: {e}")))
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
        self.transport.chat(self.body(&request, false)?).await
    }

    async fn stream_chat(&self, request: ChatRequest) -> Result<ChatStream, LlmError> {
        self.transport.stream(self.body(&request, true)?).await
    }
}

#[cfg(test)]
mod tests;
