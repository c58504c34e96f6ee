//! The HTTP model client: one [`ModelClient`] per model, speaking its [`Protocol`] over the shared
//! [`Transport`] (retries, timeouts, size caps: see `transport.rs`). What differs between
//! protocols (path, headers, body, reply and stream decoding) is the protocol's folder under
//! `providers/`; the client only holds the model's settings.
//!
//! Provider JSON never leaves `providers/`: callers only see [`ChatRequest`], [`ChatResponse`]
//! and [`StreamEvent`](super::StreamEvent).

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use super::providers::{Call, Protocol, Wire};
use super::retry::Backoff;
use super::transport::Transport;
use super::{
    Abilities, ChatRequest, ChatResponse, ChatStream, Llm, LlmError, RequestBody, Sampling,
    SynthesisPolicy,
};

pub use super::transport::{DEFAULT_MAX_RESPONSE_BYTES, STREAM_TOTAL_FACTOR};

/// Everything needed to talk to one model of one provider.
#[derive(Clone, Debug)]
pub struct ClientConfig {
    /// The wire protocol, with its own settings.
    pub protocol: Protocol,
    /// e.g. `https://api.openai.com/v1` (no trailing `/chat/completions`) or
    /// `https://api.anthropic.com` (requests go to `{base_url}/v1/messages`).
    pub base_url: String,
    /// Sent as the protocol says (`Authorization: Bearer`, `x-api-key`).
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

pub struct ModelClient {
    cfg: ClientConfig,
    wire: Arc<dyn Wire>,
    transport: Arc<Transport>,
    /// `[[models]] synthesis`: runs on this model end with a synthesis call.
    synthesis: SynthesisPolicy,
    /// `[[models]] temperature`, `top_p`, `seed`: filled into requests that leave them unset.
    sampling: Sampling,
}

impl ModelClient {
    pub fn new(mut cfg: ClientConfig) -> Result<Self, LlmError> {
        let wire = cfg.protocol.wire();
        cfg.abilities = wire.abilities(cfg.abilities);
        let path = wire.path(cfg.base_url.trim_end_matches('/'));
        let mut transport = Transport::new(
            Arc::clone(&wire),
            &cfg.base_url,
            path,
            cfg.api_key.clone(),
            cfg.timeout,
            cfg.max_retries,
        )?;
        transport.name = cfg.model.clone();
        Ok(Self {
            cfg,
            wire,
            transport: Arc::new(transport),
            synthesis: SynthesisPolicy::default(),
            sampling: Sampling::default(),
        })
    }

    /// The encoded body of `request` (public for the benchmark of the encoders).
    pub fn body(&self, request: &ChatRequest, stream: bool) -> Result<RequestBody, LlmError> {
        let request = request.clone().with_sampling(self.sampling);
        let call = Call {
            model: &self.cfg.model,
            name: &self.transport.name,
            max_tokens: self.cfg.max_output_tokens,
            stream,
        };
        self.wire
            .body(call, &request)
            .map_err(|e| LlmError::InvalidResponse(format!("cannot encode the request: {e}")))
    }

    /// A non-streamed reply decoded as a call decodes it (public for the same benchmark).
    pub fn parse_reply(&self, bytes: &[u8]) -> Result<ChatResponse, LlmError> {
        self.transport.parse(bytes)
    }

    /// The model's sampling settings, filled into each request that leaves them unset.
    pub fn with_sampling(mut self, sampling: Sampling) -> Self {
        self.sampling = sampling;
        self
    }

    /// `[[models]] synthesis`: when runs on this model end with a synthesis call.
    pub fn with_synthesis(mut self, policy: SynthesisPolicy) -> Self {
        self.synthesis = policy;
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

    /// `LLM_HTTP2`: HTTP/2 to the provider (see `Transport::set_http2`).
    pub fn with_http2(mut self, on: bool) -> Result<Self, LlmError> {
        Arc::make_mut(&mut self.transport).set_http2(on)?;
        Ok(self)
    }

    /// The full URL requests go to.
    pub fn endpoint(&self) -> &str {
        self.transport.url()
    }
}

#[async_trait]
impl Llm for ModelClient {
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
    fn synthesis(&self) -> SynthesisPolicy {
        self.synthesis
    }

    async fn chat(&self, request: ChatRequest) -> Result<ChatResponse, LlmError> {
        self.transport.chat(self.body(&request, false)?).await
    }

    async fn stream_chat(&self, request: ChatRequest) -> Result<ChatStream, LlmError> {
        self.transport.stream(self.body(&request, true)?).await
    }
}
