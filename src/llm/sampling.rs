//! [`Sampled`]: a model with an agent's settings (`[[agents]] temperature`, `top_p`, `seed`,
//! `synthesis`) laid over its model's in every request of its runs — the loop, synthesis,
//! structured calls and DAG steps all call the run's one [`Llm`], so wrapping it reaches them
//! all. The model's own settings fill in below, in its client.

use std::sync::Arc;

use async_trait::async_trait;

use super::{
    Abilities, ChatRequest, ChatResponse, ChatStream, Llm, LlmError, Sampling, SynthesisPolicy,
};

/// `inner` with `sampling` filled into each request that leaves a setting unset, and its
/// synthesis policy replaced by `synthesis` when that is set.
pub struct Sampled {
    inner: Arc<dyn Llm>,
    sampling: Sampling,
    synthesis: Option<SynthesisPolicy>,
}

impl Sampled {
    /// `inner` itself when `sampling` sets nothing.
    pub fn wrap(inner: Arc<dyn Llm>, sampling: Sampling) -> Arc<dyn Llm> {
        Self::agent(inner, sampling, None)
    }

    /// An agent's sampling and synthesis policy over `inner`'s; `inner` itself when the agent
    /// sets neither.
    pub fn agent(
        inner: Arc<dyn Llm>,
        sampling: Sampling,
        synthesis: Option<SynthesisPolicy>,
    ) -> Arc<dyn Llm> {
        if sampling.is_empty() && synthesis.is_none() {
            inner
        } else {
            Arc::new(Self {
                inner,
                sampling,
                synthesis,
            })
        }
    }
}

#[async_trait]
impl Llm for Sampled {
    fn model(&self) -> &str {
        self.inner.model()
    }
    fn abilities(&self) -> Abilities {
        self.inner.abilities()
    }
    fn context_window(&self) -> u32 {
        self.inner.context_window()
    }
    fn max_output_tokens(&self) -> u32 {
        self.inner.max_output_tokens()
    }
    fn synthesis(&self) -> SynthesisPolicy {
        self.synthesis.unwrap_or_else(|| self.inner.synthesis())
    }
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
