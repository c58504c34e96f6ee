//! The OpenAI-compatible Chat Completions protocol (`[[models]] api = "openai-chat"`): request
//! bodies serialised from our normalised [`ChatRequest`] in one pass (`request`), non-streamed
//! replies (`reply`) and the chunks of a streamed one ([`StreamDecoder`]). Reading is lenient
//! (every field optional, `null` accepted) because compatible servers deviate in harmless ways.
//! Provider JSON never leaves this folder.

mod reply;
// Visible to the layer for the tests of the body's encoding (`body/tests.rs`).
pub(in crate::llm) mod request;
mod stream;

use reqwest::RequestBuilder;

use super::{Call, Decode, Wire};
use crate::llm::{ChatRequest, ChatResponse, LlmError, RequestBody, StreamEvent};
pub use stream::StreamDecoder;

/// The Chat Completions wire format.
pub(super) struct OpenAiWire;

impl Wire for OpenAiWire {
    fn path(&self, _base_url: &str) -> &'static str {
        "/chat/completions"
    }

    fn body(
        &self,
        call: Call<'_>,
        request: &ChatRequest,
    ) -> Result<RequestBody, serde_json::Error> {
        let body = request::request_body(call.model, call.name, request, call.stream);
        RequestBody::encode(&body, &request.messages)
    }

    fn authorize(&self, builder: RequestBuilder, key: Option<&str>) -> RequestBuilder {
        match key {
            Some(key) => builder.bearer_auth(key),
            None => builder,
        }
    }

    fn parse(&self, bytes: &[u8], name: &str) -> Result<ChatResponse, LlmError> {
        reply::parse_completion(bytes, name)
    }

    fn decoder(&self, name: &str) -> Box<dyn Decode> {
        Box::new(StreamDecoder::for_model(name))
    }
}

impl Decode for StreamDecoder {
    fn feed(&mut self, data: &str) -> Result<Vec<StreamEvent>, LlmError> {
        StreamDecoder::feed(self, data)
    }
    fn end_of_input(&mut self) -> Result<Vec<StreamEvent>, LlmError> {
        StreamDecoder::end_of_input(self)
    }
    fn is_done(&self) -> bool {
        StreamDecoder::is_done(self)
    }
}
