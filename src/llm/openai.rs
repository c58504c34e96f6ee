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

use super::builders::client_builders;
use super::openai_wire::request_body;
use super::retry::Backoff;
use super::transport::{Protocol, Transport};
use super::{
    Abilities, ChatRequest, ChatResponse, ChatStream, Llm, LlmError, RequestBody, Sampling,
    SynthesisPolicy,
};

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
    synthesis: SynthesisPolicy,
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
            synthesis: SynthesisPolicy::default(),
            sampling: Sampling::default(),
        })
    }

    /// The encoded body of `request` (public for the benchmark of the encoders).
    pub fn body(&self, request: &ChatRequest, stream: bool) -> Result<RequestBody, LlmError> {
        let request = request.clone().with_sampling(self.sampling);
        let body = request_body(&self.cfg.model, &self.transport.name, &request, stream);
        RequestBody::encode(&body, &request.messages)
            .map_err(|e| LlmError::InvalidResponse(format!("cannot encode the request: {e}")))
    }

    /// A non-streamed reply decoded as a call decodes it (public for the same benchmark).
    pub fn parse_reply(&self, bytes: &[u8]) -> Result<ChatResponse, LlmError> {
        self.transport.parse(bytes)
    }
}

client_builders!(OpenAiClient);

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

#[cfg(test)]
mod tests;
