//! [`Sampled`]: a model with an agent's sampling settings (`[[agents]] temperature`, `top_p`,
//! `seed`) laid over every request of its runs — the loop, synthesis, structured calls and DAG
//! steps all call the run's one [`Llm`], so wrapping it reaches them all. The model's own
//! settings fill in below, in its client.

use std::sync::Arc;

use async_trait::async_trait;

use super::{Abilities, ChatRequest, ChatResponse, ChatStream, Llm, LlmError, Sampling};

/// `inner` with `sampling` filled into each request that leaves a setting unset.
pub struct Sampled {
    inner: Arc<dyn Llm>,
    sampling: Sampling,
}

impl Sampled {
    /// `inner` itself when `sampling` sets nothing.
    pub fn wrap(inner: Arc<dyn Llm>, sampling: Sampling) -> Arc<dyn Llm> {
        if sampling.is_empty() {
            inner
        } else {
            Arc::new(Self { inner, sampling })
        }
    }
}

#[async_trait]
impl Llm for Sampled {
    crate::llm::forward_llm_description!(inner);
    async fn chat(&self, request: ChatRequest) -> Result<ChatResponse, LlmError> {
        self.inner.chat(request.with_sampling(self.sampling)).await
    }
    async fn stream_chat(&self, request: ChatRequest) -> Result<ChatStream, LlmError> {
        let request = request.with_sampling(self.sampling);
        self.inner.stream_chat(request).await
    }
}

#[cfg(test)]
mod tests;
