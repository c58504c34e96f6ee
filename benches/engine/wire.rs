//! [`Wire`]: a zero-latency model that speaks a provider's protocol without a network. Each
//! call's request is encoded by that provider's real client (`body`) and its reply decoded by
//! that client from the protocol's own bytes (`parse_reply`); only the HTTP exchange, which both
//! protocols share (`src/llm/transport.rs`), is left out, so the difference between two runs is
//! the encoders' and decoders' alone.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;
use reagent::llm::client::{ClientConfig, ModelClient};
use reagent::llm::providers::{self, AnthropicOptions};
use reagent::llm::{Abilities, ChatRequest, ChatResponse, ChatStream, Llm, LlmError};
use reagent::testing::ScriptedLlm;
use serde_json::json;

/// The protocols compared.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    OpenAi,
    Anthropic,
}

pub struct Wire {
    client: ModelClient,
    /// The loop's replies in the protocol's bytes, first in first out.
    replies: Mutex<VecDeque<Vec<u8>>>,
    /// Abilities, limits and the streamed synthesis answer (the same for both protocols).
    inner: ScriptedLlm,
}

impl Wire {
    /// `iterations` calls of the no-op tool, then the final answer `done`.
    pub fn new(protocol: Protocol, iterations: usize) -> Self {
        let abilities = Abilities::default();
        let timeout = Duration::from_secs(60);
        // Never contacted: the base URLs only satisfy the constructor.
        let (wire, base_url) = match protocol {
            Protocol::OpenAi => (providers::Protocol::OpenAi, "http://127.0.0.1:9/v1"),
            Protocol::Anthropic => (
                providers::Protocol::Anthropic(AnthropicOptions {
                    thinking_budget: None,
                    cache: true,
                }),
                "http://127.0.0.1:9",
            ),
        };
        let client = ModelClient::new(ClientConfig {
            protocol: wire,
            base_url: base_url.into(),
            api_key: None,
            model: "bench".into(),
            abilities,
            context_window: 128_000,
            max_output_tokens: 4_096,
            timeout,
            max_retries: 0,
        })
        .expect("client");
        let mut replies: VecDeque<Vec<u8>> =
            (0..iterations).map(|i| tool_reply(protocol, i)).collect();
        replies.push_back(text_reply(protocol, "done"));
        Self {
            client,
            replies: Mutex::new(replies),
            inner: ScriptedLlm::native().without_recording(),
        }
    }

    fn encode(&self, request: &ChatRequest, stream: bool) -> Result<(), LlmError> {
        let body = self.client.body(request, stream)?;
        std::hint::black_box(body);
        Ok(())
    }
}

fn tool_reply(protocol: Protocol, i: usize) -> Vec<u8> {
    let id = format!("c{i}");
    let reply = match protocol {
        Protocol::OpenAi => json!({
            "id": "chatcmpl-1", "object": "chat.completion", "model": "bench",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": null,
                "tool_calls": [{"id": id, "type": "function",
                    "function": {"name": "noop", "arguments": format!(r#"{{"i":{i}}}"#)}}]}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }),
        Protocol::Anthropic => json!({
            "id": "msg_1", "type": "message", "role": "assistant", "model": "bench",
            "content": [{"type": "tool_use", "id": id, "name": "noop", "input": {"i": i}}],
            "stop_reason": "tool_use", "stop_sequence": null,
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }),
    };
    reply.to_string().into_bytes()
}

fn text_reply(protocol: Protocol, text: &str) -> Vec<u8> {
    let reply = match protocol {
        Protocol::OpenAi => json!({
            "id": "chatcmpl-1", "object": "chat.completion", "model": "bench",
            "choices": [{"index": 0, "finish_reason": "stop",
                "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }),
        Protocol::Anthropic => json!({
            "id": "msg_1", "type": "message", "role": "assistant", "model": "bench",
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn", "stop_sequence": null,
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }),
    };
    reply.to_string().into_bytes()
}

#[async_trait]
impl Llm for Wire {
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
    fn synthesis(&self) -> reagent::llm::SynthesisPolicy {
        self.inner.synthesis()
    }

    async fn chat(&self, request: ChatRequest) -> Result<ChatResponse, LlmError> {
        self.encode(&request, false)?;
        drop(request);
        let reply = self.replies.lock().expect("replies").pop_front();
        let reply = reply.ok_or_else(|| LlmError::InvalidResponse("script exhausted".into()))?;
        self.client.parse_reply(&reply)
    }

    async fn stream_chat(&self, request: ChatRequest) -> Result<ChatStream, LlmError> {
        // The synthesis request is encoded too; its two-word answer is not decoded (the
        // streamed decoders are per token, measured by the load generator's runs).
        self.encode(&request, true)?;
        self.inner.stream_chat(request).await
    }
}
