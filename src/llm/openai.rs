//! placeholder (helper A): the OpenAI-compatible client. The public shape below is fixed
//! (others build against it); the body is being written.
use std::time::Duration;

use async_trait::async_trait;

use super::{Abilities, ChatRequest, ChatResponse, ChatStream, Llm, LlmError};

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
}

impl OpenAiClient {
    pub fn new(cfg: OpenAiConfig) -> Result<Self, LlmError> {
        Ok(Self { cfg })
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
    async fn chat(&self, _request: ChatRequest) -> Result<ChatResponse, LlmError> {
        Err(LlmError::Connect("not implemented yet".into()))
    }
    async fn stream_chat(&self, _request: ChatRequest) -> Result<ChatStream, LlmError> {
        Err(LlmError::Connect("not implemented yet".into()))
    }
}
