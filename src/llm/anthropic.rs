//! The native Anthropic Messages client (`[[models]] api = "anthropic-messages"`): one
//! [`AnthropicClient`] per model, speaking `POST {base_url}/v1/messages` over the same
//! [`Transport`] as the OpenAI client (retries with `retry-after`, 529 `overloaded_error`
//! included; timeouts; size caps; same-origin redirects). Only the wire format differs: see
//! `anthropic_wire.rs` for the mapping, extended thinking and the cache breakpoints.
//!
//! Anthropic has no JSON mode nor `response_format`: structured calls go by a forced tool, which
//! the abilities say (`json_mode` and `json_schema` are false whatever the configuration
//! claims), so a JSON-mode run on an Anthropic model is held to its action by the prompt alone.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use super::anthropic_wire::{request_body, Settings};
use super::builders::client_builders;
use super::retry::Backoff;
use super::transport::{Protocol, Transport};
use super::{
    Abilities, ChatRequest, ChatResponse, ChatStream, Llm, LlmError, RequestBody, Sampling,
    SynthesisPolicy,
};

/// Everything needed to talk to one model over the Messages API.
#[derive(Clone, Debug)]
pub struct AnthropicConfig {
    /// e.g. `https://api.anthropic.com` (requests go to `{base_url}/v1/messages`).
    pub base_url: String,
    /// Sent as `x-api-key`.
    pub api_key: Option<String>,
    pub model: String,
    pub abilities: Abilities,
    pub context_window: u32,
    pub max_output_tokens: u32,
    pub timeout: Duration,
    pub max_retries: u32,
    /// `thinking = { budget_tokens = N }`: extended thinking with this budget.
    pub thinking_budget: Option<u32>,
    /// `cache = true`: `cache_control` breakpoints on the tools, the system prompt and the
    /// last message.
    pub cache: bool,
}

pub struct AnthropicClient {
    cfg: AnthropicConfig,
    transport: Arc<Transport>,
    synthesis: SynthesisPolicy,
    sampling: Sampling,
}

impl AnthropicClient {
    pub fn new(mut cfg: AnthropicConfig) -> Result<Self, LlmError> {
        cfg.abilities.json_mode = false;
        cfg.abilities.json_schema = false;
        let base = cfg.base_url.trim_end_matches('/');
        // A base URL given with its `/v1` (as OpenAI-style URLs are) is taken as it is.
        let path = if base.ends_with("/v1") {
            "/messages"
        } else {
            "/v1/messages"
        };
        let mut transport = Transport::new(
            Protocol::AnthropicMessages,
            base,
            path,
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
        let settings = Settings {
            model: &self.cfg.model,
            name: &self.transport.name,
            max_tokens: self.cfg.max_output_tokens,
            thinking: self.cfg.thinking_budget,
            cache: self.cfg.cache,
            stream,
        };
        RequestBody::encode(&request_body(settings, &request), &request.messages)
            .map_err(|e| LlmError::InvalidResponse(format!("cannot encode the request: {e}")))
    }

    /// A non-streamed reply decoded as a call decodes it (public for the same benchmark).
    pub fn parse_reply(&self, bytes: &[u8]) -> Result<ChatResponse, LlmError> {
        self.transport.parse(bytes)
    }
}

// `sampling.seed` is not part of the Messages API and never sent.
client_builders!(AnthropicClient);

#[async_trait]
impl Llm for AnthropicClient {
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
