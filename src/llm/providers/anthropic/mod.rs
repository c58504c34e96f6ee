//! The native Anthropic Messages protocol (`[[models]] api = "anthropic-messages"`): request
//! bodies (`request`), non-streamed replies (`reply`) and the SSE events of a streamed one
//! ([`MessageDecoder`]). Reading is lenient like the OpenAI side: every field
//! optional, unknown block and event types ignored.
//!
//! A reply's content blocks become the normalised reply: `text` blocks its content, `tool_use`
//! blocks its tool calls (`input` as the arguments' JSON text), `thinking` blocks its reasoning
//! text. `thinking` and `redacted_thinking` blocks are also kept whole, with their position, as
//! the turn's [`Continuity`](crate::llm::Continuity) (under [`THINKING_KEY`]): the model rejects
//! a later tool-use turn whose thinking blocks are missing or altered. Stop reasons map to the
//! OpenAI names the rest of reagent knows (`end_turn` → `stop`, `tool_use` → `tool_calls`,
//! `max_tokens` → `length`); `refusal` ends the turn with a sentence saying so and no tool calls.
//!
//! Anthropic has no JSON mode nor `response_format`: structured calls go by a forced tool, which
//! the abilities say (`json_mode` and `json_schema` are false whatever the configuration
//! claims), so a JSON-mode run on an Anthropic model is held to its action by the prompt alone.
//! `sampling.seed` is not part of the Messages API and never sent.

mod reply;
// Visible to the layer for the tests of the body's encoding (`body/tests.rs`).
pub(in crate::llm) mod request;
mod stream;

use reqwest::RequestBuilder;

use super::{Call, Decode, Wire};
use crate::llm::{Abilities, ChatRequest, ChatResponse, LlmError, RequestBody, StreamEvent};
pub use stream::MessageDecoder;

/// Where a turn's thinking blocks are kept in [`Continuity::message`](crate::llm::Continuity).
pub(in crate::llm) const THINKING_KEY: &str = "anthropic_thinking";

/// The answer of a turn the model refused, when it wrote nothing itself.
pub const REFUSAL_TEXT: &str = "The model refused to answer this request.";

/// The `anthropic-version` header every Messages request carries.
const ANTHROPIC_VERSION: &str = "2023-06-01";

/// What only a Messages model has in its configuration.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AnthropicOptions {
    /// `thinking = { budget_tokens = N }`: extended thinking with this budget.
    pub thinking_budget: Option<u32>,
    /// `cache = true`: `cache_control` breakpoints on the tools, the system prompt and the
    /// last message.
    pub cache: bool,
}

/// The Messages wire format of one model.
pub(super) struct AnthropicWire(pub(super) AnthropicOptions);

impl Wire for AnthropicWire {
    fn path(&self, base_url: &str) -> &'static str {
        // A base URL given with its `/v1` (as OpenAI-style URLs are) is taken as it is.
        if base_url.ends_with("/v1") {
            "/messages"
        } else {
            "/v1/messages"
        }
    }

    fn abilities(&self, claimed: Abilities) -> Abilities {
        Abilities {
            json_mode: false,
            json_schema: false,
            ..claimed
        }
    }

    fn body(
        &self,
        call: Call<'_>,
        request: &ChatRequest,
    ) -> Result<RequestBody, serde_json::Error> {
        let settings = request::Settings {
            model: call.model,
            name: call.name,
            max_tokens: call.max_tokens,
            thinking: self.0.thinking_budget,
            cache: self.0.cache,
            stream: call.stream,
        };
        RequestBody::encode(&request::request_body(settings, request), &request.messages)
    }

    fn authorize(&self, builder: RequestBuilder, key: Option<&str>) -> RequestBuilder {
        let builder = builder.header("anthropic-version", ANTHROPIC_VERSION);
        match key {
            Some(key) => builder.header("x-api-key", key),
            None => builder,
        }
    }

    fn parse(&self, bytes: &[u8], name: &str) -> Result<ChatResponse, LlmError> {
        reply::parse_message(bytes, name)
    }

    fn decoder(&self, name: &str) -> Box<dyn Decode> {
        Box::new(MessageDecoder::for_model(name))
    }

    // Anthropic's errors are `{type: "error", error: {type, message}}`: its words, not JSON.
    fn error_text(&self, kind: Option<&str>, message: &str) -> Option<String> {
        Some(match kind {
            Some(kind) => format!("Anthropic {kind}: {message}"),
            None => format!("Anthropic: {message}"),
        })
    }
}

impl Decode for MessageDecoder {
    fn feed(&mut self, data: &str) -> Result<Vec<StreamEvent>, LlmError> {
        MessageDecoder::feed(self, data)
    }
    fn end_of_input(&mut self) -> Result<Vec<StreamEvent>, LlmError> {
        MessageDecoder::end_of_input(self)
    }
    fn is_done(&self) -> bool {
        MessageDecoder::is_done(self)
    }
}

#[cfg(test)]
mod tests;
