//! The builder methods every HTTP client of a provider protocol shares: each client keeps its
//! [`Transport`](super::transport::Transport) in an `Arc` and its own `sampling` and `synthesis`.

/// Adds `with_sampling`, `with_synthesis`, `with_name`, `with_backoff`,
/// `with_max_response_bytes`, `with_http2` and `endpoint` to a client struct with fields
/// `transport: Arc<Transport>`, `sampling: Sampling` and `synthesis: SynthesisPolicy`.
macro_rules! client_builders {
    ($client:ty) => {
        impl $client {
            /// The model's sampling settings, filled into each request that leaves them unset.
            pub fn with_sampling(mut self, sampling: Sampling) -> Self {
                self.sampling = sampling;
                self
            }

            /// `[[models]] synthesis`: when runs on this model end with a synthesis call.
            pub fn with_synthesis(mut self, policy: crate::domain::SynthesisPolicy) -> Self {
                self.synthesis = policy;
                self
            }

            /// The model's registry name (the provider's model name until set): what a
            /// reply's continuity is kept under, and replayed to.
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
    };
}
pub(super) use client_builders;
