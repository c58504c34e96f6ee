//! LLM layer: our own normalised message types, the [`Llm`] trait every provider implements,
//! its HTTP implementation (one [`ModelClient`](client::ModelClient) over one transport, speaking
//! the protocol a folder of `providers/` describes: OpenAI-compatible Chat Completions or
//! Anthropic Messages), retry policy, `structured_llm_call`, `extract_json` and the model
//! registry.
//!
//! Provider JSON never leaves `providers/`: everything above this module speaks [`Message`],
//! [`ChatRequest`] and [`ChatResponse`].

pub mod body;
pub mod client;
pub mod content_calls;
pub mod continuity;
mod image;
pub mod json;
pub mod price;
pub mod providers;
pub mod registry;
pub mod retry;
pub mod sampling;
pub(crate) mod sse;
pub mod stream;
pub mod structured;
pub mod traced;
mod transport;
mod usage;

use std::pin::Pin;
use std::sync::Arc;

use async_trait::async_trait;
use futures::Stream;
use serde::{Deserialize, Serialize};

pub use body::RequestBody;
pub use continuity::Continuity;
pub use image::{ImagePart, SharedUrl};
pub use json::{extract_json, SchemaText};
pub use price::{Cost, Price};
pub use sse::SseData;
pub use structured::{structured_llm_call, StructuredCall, StructuredError, StructuredResult};
pub use usage::{Usage, MAX_COUNT};

/// Who wrote a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

/// One tool call requested by the model. `arguments` is the raw JSON text the provider sent:
/// it may be invalid JSON, and the engine decides what to do with that.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// A normalised chat message. `pinned` is engine metadata (the context guard never drops a
/// pinned message); it is never sent to a provider. `continuity` is what the provider sent with
/// an assistant turn beyond this message, replayed only to the model that produced it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    #[serde(default)]
    pub content: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pinned: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub continuity: Option<Box<Continuity>>,
    /// A tool result that reports a failure (Anthropic's `tool_result.is_error`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
    /// Images of a user message (docs/api.md "Images"), sent after its text as image parts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<ImagePart>,
}

impl Message {
    fn new(role: Role, content: impl Into<String>) -> Self {
        Self {
            role,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
            reasoning_content: None,
            pinned: false,
            continuity: None,
            images: Vec::new(),
            is_error: false,
        }
    }
    pub fn system(content: impl Into<String>) -> Self {
        Self::new(Role::System, content)
    }
    pub fn user(content: impl Into<String>) -> Self {
        Self::new(Role::User, content)
    }
    pub fn assistant(content: impl Into<String>) -> Self {
        Self::new(Role::Assistant, content)
    }
    /// An assistant message carrying tool calls (content may be empty).
    pub fn assistant_tool_calls(content: impl Into<String>, tool_calls: Vec<ToolCall>) -> Self {
        Self {
            tool_calls,
            ..Self::new(Role::Assistant, content)
        }
    }
    pub fn tool(tool_call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Self {
            tool_call_id: Some(tool_call_id.into()),
            ..Self::new(Role::Tool, content)
        }
    }
    /// The assistant turn of `response` (its content, its tool calls and its continuity).
    pub fn from_response(response: &ChatResponse) -> Self {
        Self::assistant_tool_calls(response.content.clone(), response.tool_calls.clone())
            .with_continuity(response.continuity.clone())
    }
    /// Attaches what the provider sent with this turn beyond the message.
    pub fn with_continuity(mut self, continuity: Option<Continuity>) -> Self {
        self.continuity = continuity.map(Box::new);
        self
    }
    /// Attaches images (a user message's).
    pub fn with_images(mut self, images: Vec<ImagePart>) -> Self {
        self.images = images;
        self
    }

    /// Replaces the message's images by their placeholders at the end of its text (an old
    /// message after a compaction, or one beyond what a history replays). False when it had
    /// none.
    pub fn images_to_text(&mut self) -> bool {
        if self.images.is_empty() {
            return false;
        }
        for image in std::mem::take(&mut self.images) {
            if !self.content.is_empty() {
                self.content.push('\n');
            }
            self.content.push_str(&image.stored().placeholder());
        }
        true
    }

    /// Marks a tool result as reporting a failure (or not).
    pub fn failed(mut self, error: bool) -> Self {
        self.is_error = error;
        self
    }
    /// Marks the message as pinned: it survives every compaction.
    pub fn pinned(mut self) -> Self {
        self.pinned = true;
        self
    }
}

/// A tool as the model sees it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: serde_json::Value,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ToolChoice {
    Auto,
    None,
    Required,
    /// Force this one function.
    Function(String),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ResponseFormat {
    Text,
    JsonObject,
    /// `{"type": "json_schema", "json_schema": {"name": …, "schema": …}}`: a server that
    /// constrains its output with a grammar writes only what the schema allows.
    JsonSchema {
        name: &'static str,
        schema: SchemaText,
    },
}

/// Everything one LLM call needs besides the model itself.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ChatRequest {
    /// Shared with the engine's history: building a request copies no message, and the engine
    /// appends in place once the request is dropped (`Arc::make_mut`).
    pub messages: Arc<Vec<Message>>,
    /// Shared: the same definitions go into every request of a run (and of every run using the
    /// same tools), see [`crate::tools::ToolRegistry::definitions`].
    pub tools: Arc<[ToolDefinition]>,
    pub tool_choice: Option<ToolChoice>,
    pub response_format: Option<ResponseFormat>,
    pub temperature: Option<f32>,
    pub top_p: Option<f32>,
    pub seed: Option<u64>,
    pub max_tokens: Option<u32>,
}

impl ChatRequest {
    pub fn new(messages: impl Into<Arc<Vec<Message>>>) -> Self {
        Self {
            messages: messages.into(),
            ..Self::default()
        }
    }

    /// Fills the sampling settings this request leaves unset from `sampling` (a model's or an
    /// agent's): what a call asks for itself wins.
    pub fn with_sampling(mut self, sampling: Sampling) -> Self {
        let own = Sampling {
            temperature: self.temperature,
            top_p: self.top_p,
            seed: self.seed,
        };
        let s = own.over(sampling);
        (self.temperature, self.top_p, self.seed) = (s.temperature, s.top_p, s.seed);
        self
    }
}

/// A complete (non-streamed) reply.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ChatResponse {
    pub content: String,
    pub tool_calls: Vec<ToolCall>,
    pub reasoning_content: Option<String>,
    /// What the provider sent beyond the normalised reply, to replay to the same model.
    pub continuity: Option<Continuity>,
    pub finish_reason: Option<String>,
    /// Usage of this call; `llm_calls` is 1 even when the provider reported no token counts.
    pub usage: Usage,
}

/// One piece of a streamed reply, already normalised. Tool-call deltas are assembled inside
/// the client and surface once, complete, as [`StreamEvent::ToolCalls`].
#[derive(Clone, Debug, PartialEq)]
pub enum StreamEvent {
    Content(String),
    Reasoning(String),
    ToolCalls(Vec<ToolCall>),
    /// What the provider sent beyond the normalised reply; at most once, before `Usage`.
    Continuity(Continuity),
    /// Emitted once, at the end, with `llm_calls = 1`.
    Usage(Usage),
    Done {
        finish_reason: Option<String>,
    },
}

pub type ChatStream = Pin<Box<dyn Stream<Item = Result<StreamEvent, LlmError>> + Send>>;

/// What a model can do; drives mode choice and the structured-output chain.
pub use crate::domain::{Abilities, Sampling, SynthesisPolicy};

/// Every way an LLM call can fail. Never a panic.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum LlmError {
    /// The provider said the prompt is too long; the engine compacts and retries once.
    #[error("context length exceeded: {0}")]
    ContextLengthExceeded(String),
    /// A non-success HTTP status; `body` is a short excerpt.
    #[error("provider returned HTTP {status}: {body}")]
    Status { status: u16, body: String },
    #[error("LLM call timed out after {0} s")]
    Timeout(u64),
    #[error("could not reach the provider: {0}")]
    Connect(String),
    /// The stream broke or sent something unreadable after it started.
    #[error("stream error: {0}")]
    Stream(String),
    /// A 2xx response we could not understand.
    #[error("invalid response: {0}")]
    InvalidResponse(String),
    #[error("cancelled")]
    Cancelled,
    /// The tenant's budget cannot take the call's worst case (docs/api.md): it was not made.
    #[error("budget exceeded: {0}")]
    BudgetExceeded(String),
}

impl LlmError {
    /// One plain sentence for the person who asked: what failed and what to set. The details
    /// (provider JSON, the error chain) stay in `done.error` and the logs.
    pub fn user_message(&self) -> String {
        match self {
            LlmError::Status {
                status: status @ (401 | 403),
                ..
            } => format!(
                "the model provider refused the API key (HTTP {status}). Set LLM_API_KEY (or \
                 the model's api_key_env) to a valid key for LLM_BASE_URL."
            ),
            LlmError::Status { status: 404, .. } => "the model provider does not know this \
                 model or URL (HTTP 404). Check LLM_MODEL and LLM_BASE_URL."
                .into(),
            LlmError::Status { status: 429, .. } => {
                "the model provider is limiting requests (HTTP 429). Try again in a moment.".into()
            }
            LlmError::Status { status, .. } => format!(
                "the model provider answered with an error (HTTP {status}). Try again in a moment."
            ),
            LlmError::Connect(_) => "the model provider could not be reached. Check \
                 LLM_BASE_URL (and LLM_API_KEY) and the network."
                .into(),
            LlmError::Timeout(s) => {
                format!("the model provider did not answer within {s} s (LLM_TIMEOUT_S).")
            }
            LlmError::ContextLengthExceeded(_) => {
                "the conversation is too long for the model's context window.".into()
            }
            LlmError::Stream(_) | LlmError::InvalidResponse(_) => {
                "the model provider sent a response that could not be read.".into()
            }
            LlmError::Cancelled => "the request was cancelled.".into(),
            LlmError::BudgetExceeded(m) => format!("the budget is used up ({m})."),
        }
    }

    /// Worth retrying: 429/500/502/503/504, Anthropic's 529 (overloaded), connection errors and
    /// timeouts.
    pub fn is_retryable(&self) -> bool {
        match self {
            LlmError::Status { status, .. } => matches!(status, 429 | 500 | 502 | 503 | 504 | 529),
            LlmError::Timeout(_) | LlmError::Connect(_) => true,
            _ => false,
        }
    }
}

/// The descriptive methods of an [`Llm`] that wraps another one (metering, sampling): every
/// one of them is the wrapped model's, so a wrapper writes only `chat` and `stream_chat`.
macro_rules! forward_llm_description {
    ($inner:ident) => {
        fn model(&self) -> &str {
            self.$inner.model()
        }
        fn abilities(&self) -> Abilities {
            self.$inner.abilities()
        }
        fn context_window(&self) -> u32 {
            self.$inner.context_window()
        }
        fn max_output_tokens(&self) -> u32 {
            self.$inner.max_output_tokens()
        }
        fn synthesis(&self) -> crate::domain::SynthesisPolicy {
            self.$inner.synthesis()
        }
    };
}
pub(crate) use forward_llm_description;

/// A chat model. One instance is bound to one model for the whole run.
#[async_trait]
pub trait Llm: Send + Sync {
    /// The provider's model name (as sent in requests).
    fn model(&self) -> &str;
    fn abilities(&self) -> Abilities;
    /// Tokens the model accepts in total.
    fn context_window(&self) -> u32 {
        128_000
    }
    /// Tokens reserved for its output.
    fn max_output_tokens(&self) -> u32 {
        4_096
    }
    /// When the run's answer is written by a last synthesis call (`[[models]] synthesis`). A
    /// model that does not say keeps the original two phases (`always`); the configured
    /// clients carry their entry's setting (default `auto`).
    fn synthesis(&self) -> SynthesisPolicy {
        SynthesisPolicy::Always
    }
    async fn chat(&self, request: ChatRequest) -> Result<ChatResponse, LlmError>;
    async fn stream_chat(&self, request: ChatRequest) -> Result<ChatStream, LlmError>;
}

/// Drains a stream into a complete response (used by tests and by callers that want the
/// whole reply). Content and reasoning deltas are concatenated.
pub async fn collect_stream(mut stream: ChatStream) -> Result<ChatResponse, LlmError> {
    use futures::StreamExt;
    let mut out = ChatResponse {
        usage: Usage::call(0, 0),
        ..ChatResponse::default()
    };
    let mut reasoning = String::new();
    while let Some(event) = stream.next().await {
        match event? {
            StreamEvent::Content(c) => out.content.push_str(&c),
            StreamEvent::Reasoning(r) => reasoning.push_str(&r),
            StreamEvent::ToolCalls(calls) => out.tool_calls.extend(calls),
            StreamEvent::Continuity(c) => out.continuity = Some(c),
            StreamEvent::Usage(u) => out.usage = u,
            StreamEvent::Done { finish_reason } => out.finish_reason = finish_reason,
        }
    }
    if !reasoning.is_empty() {
        out.reasoning_content = Some(reasoning);
    }
    Ok(out)
}
