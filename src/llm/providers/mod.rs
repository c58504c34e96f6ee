//! The wire protocols the model client speaks, one folder each: its request body, its
//! non-streamed reply and its stream decoder. The client and the transport only know [`Wire`]
//! and [`Decode`]; [`Protocol::wire`] is the one place that names each protocol, so a third
//! protocol is a folder here and an arm there.
//!
//! ```text
//! providers/
//!   openai/     Chat Completions: request.rs, reply.rs, stream.rs (+ kept.rs)
//!   anthropic/  Messages: request.rs (+ blocks.rs), reply.rs, stream.rs
//! ```

pub mod anthropic;
pub mod openai;

use std::sync::Arc;

use reqwest::RequestBuilder;

use super::{Abilities, ChatRequest, ChatResponse, LlmError, RequestBody, StreamEvent};
pub use anthropic::AnthropicOptions;

/// The wire protocol a model speaks (`[[models]] api`), with the settings only it has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// OpenAI-compatible Chat Completions: `POST {base_url}/chat/completions`.
    OpenAi,
    /// Anthropic Messages: `POST {base_url}/v1/messages`.
    Anthropic(AnthropicOptions),
}

impl Protocol {
    /// The protocol's wire format.
    pub(in crate::llm) fn wire(self) -> Arc<dyn Wire> {
        match self {
            Protocol::OpenAi => Arc::new(openai::OpenAiWire),
            Protocol::Anthropic(options) => Arc::new(anthropic::AnthropicWire(options)),
        }
    }
}

/// What a request body needs besides the request: the model's settings and the call's kind.
#[derive(Clone, Copy, Debug)]
pub(in crate::llm) struct Call<'a> {
    /// The provider's model name.
    pub model: &'a str,
    /// The registry name: only continuity stamped with it is replayed.
    pub name: &'a str,
    /// The model's output cap, for protocols that require one.
    pub max_tokens: u32,
    pub stream: bool,
}

/// One protocol's side of a call: where it goes, how it is signed, encoded and decoded.
pub(in crate::llm) trait Wire: Send + Sync {
    /// The path appended to the base URL (given without its trailing `/`).
    fn path(&self, base_url: &str) -> &'static str;

    /// What the model can do over this protocol, given what its configuration claims.
    fn abilities(&self, claimed: Abilities) -> Abilities {
        claimed
    }

    /// The encoded body of `request` (sampling already filled in).
    fn body(&self, call: Call<'_>, request: &ChatRequest)
        -> Result<RequestBody, serde_json::Error>;

    /// Adds the protocol's authentication (and version) headers.
    fn authorize(&self, builder: RequestBuilder, key: Option<&str>) -> RequestBuilder;

    /// A non-streamed 2xx body; its continuity is `name`'s.
    fn parse(&self, bytes: &[u8], name: &str) -> Result<ChatResponse, LlmError>;

    /// A fresh decoder for one streamed reply of the model registered as `name`.
    fn decoder(&self, name: &str) -> Box<dyn Decode>;

    /// How an error body's own words (its `error.type` and message) read in a status error;
    /// `None` keeps the body as it came.
    fn error_text(&self, _kind: Option<&str>, _message: &str) -> Option<String> {
        None
    }
}

/// A stream decoder: SSE `data` payloads in, [`StreamEvent`]s out.
pub(in crate::llm) trait Decode: Send {
    /// One payload's events, in order.
    fn feed(&mut self, data: &str) -> Result<Vec<StreamEvent>, LlmError>;
    /// The byte stream ended: the final events, or why the reply is incomplete.
    fn end_of_input(&mut self) -> Result<Vec<StreamEvent>, LlmError>;
    /// True once the final events were produced.
    fn is_done(&self) -> bool;
}
