//! The JSON the HTTP API answers with (docs/api.md), as types of the HTTP layer: each converts from
//! what the store, the run manager or a registry hands out, so storage does not fix the wire
//! shape, and each derives its OpenAPI schema (`openapi`), so the document describes exactly
//! what is sent (a field that may be `null` is still always there, so it is `required`).
//! Errors are [`ErrorBody`]; the SSE payloads are in `openapi::events`.

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;
use utoipa::openapi::schema::{ObjectBuilder, Schema, Type};
use utoipa::openapi::RefOr;
use utoipa::ToSchema;
use uuid::Uuid;

use super::images::MessageImageView;
use crate::agent::hooks::approval::ApprovalInfo;
use crate::domain::{Engine, MessageKind, MessageRole, Mode, RunStatus};
use crate::tools::ToolSource;
use crate::{llm, store};

mod ops;
pub use ops::{Abilities, Health, Instance, Model, Ready, Tool};

/// Documents a text enum as a string with exactly its values.
macro_rules! text_schema {
    ($($ty:ty => $values:expr;)+) => {$(
        impl utoipa::PartialSchema for $ty {
            fn schema() -> RefOr<Schema> {
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .enum_values(Some($values))
                    .into()
            }
        }
        impl ToSchema for $ty {}
    )+};
}

text_schema! {
    RunStatus => RunStatus::ALL.iter().map(|v| v.as_str());
    Mode => Mode::ALL.iter().map(|v| v.as_str());
    Engine => Engine::ALL.iter().map(|v| v.as_str());
    MessageRole => MessageRole::ALL.iter().map(|v| v.as_str());
    MessageKind => MessageKind::ALL.iter().map(|v| v.as_str());
    ToolSource => ["builtin", "http", "mcp", "a2a"];
}

/// `{"error": {code, message}}`, every failure's body (docs/api.md).
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = Error)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorDetail {
    /// `invalid_request`, `unauthorized`, `not_found`, `method_not_allowed`, `conflict`,
    /// `run_active`, `no_active_run`, `payload_too_large`, `rate_limited`, `internal`,
    /// `unavailable`.
    pub code: String,
    pub message: String,
}

/// A conversation (docs/api.md, plus `system_prompt` and `tools`).
#[derive(Debug, Serialize, ToSchema)]
pub struct Conversation {
    pub id: Uuid,
    #[schema(required)]
    pub title: Option<String>,
    #[schema(required)]
    pub model: Option<String>,
    #[schema(required)]
    pub system_prompt: Option<String>,
    #[schema(required)]
    pub tools: Option<Vec<String>>,
    /// The agent whose settings apply (docs/protocols.md); `null` for none.
    #[schema(required)]
    pub agent: Option<String>,
    /// The version of its API agent it runs on (`GET /api/agents/{name}/versions`); `null`
    /// for a configured agent or none.
    #[schema(required)]
    pub agent_version: Option<u32>,
    /// The engine of its runs; `REAGENT_DEFAULT_ENGINE` when null.
    #[schema(required)]
    pub engine: Option<Engine>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// The running run of this conversation, if any.
    #[schema(required)]
    pub active_run_id: Option<Uuid>,
    /// Where this conversation was forked from (`POST /api/conversations/{id}/fork`); `null`
    /// for one that is not a fork.
    #[schema(required)]
    pub forked_from: Option<ForkedFrom>,
}

/// The conversation and run a fork was made from.
#[derive(Debug, Serialize, ToSchema)]
pub struct ForkedFrom {
    pub conversation_id: Uuid,
    /// The run whose turn the copied history ends with; `null` for a fork without history.
    #[schema(required)]
    pub run_id: Option<Uuid>,
}

impl From<store::Conversation> for Conversation {
    fn from(c: store::Conversation) -> Self {
        Self {
            id: c.id,
            title: c.title,
            model: c.model,
            system_prompt: c.system_prompt,
            tools: c.tools,
            agent: c.agent,
            agent_version: c.agent_version,
            engine: c.engine,
            created_at: c.created_at,
            updated_at: c.updated_at,
            active_run_id: c.active_run_id,
            forked_from: c.forked_from.map(|f| ForkedFrom {
                conversation_id: f.conversation_id,
                run_id: f.run_id,
            }),
        }
    }
}

/// One page of conversations, newest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct ConversationPage {
    pub items: Vec<Conversation>,
    /// The cursor of the next page; `null` on the last.
    #[schema(required)]
    pub next_before: Option<String>,
}

/// One turn of a conversation.
#[derive(Debug, Serialize, ToSchema)]
pub struct Message {
    pub id: Uuid,
    pub role: MessageRole,
    pub kind: MessageKind,
    pub content: String,
    #[schema(required)]
    pub run_id: Option<Uuid>,
    pub created_at: DateTime<Utc>,
    /// A user message's images (docs/api.md "Images"); absent when it has none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<MessageImageView>,
}

impl From<store::StoredMessage> for Message {
    fn from(m: store::StoredMessage) -> Self {
        Self {
            id: m.id,
            role: m.role,
            kind: m.kind,
            content: m.content,
            run_id: m.run_id,
            created_at: m.created_at,
            images: m.images.into_iter().map(MessageImageView::from).collect(),
        }
    }
}

/// A conversation with its messages, oldest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct ConversationDetail {
    #[serde(flatten)]
    pub conversation: Conversation,
    pub messages: Vec<Message>,
}

/// Token accounting of a run. The cache counts are the parts of `prompt_tokens` the provider
/// read from or wrote to its prompt cache (0 when it said nothing).
#[derive(Debug, Serialize, ToSchema)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub total_tokens: u64,
    pub llm_calls: u64,
    pub cache_read_tokens: u64,
    pub cache_write_tokens: u64,
    /// USD of the priced calls (docs/configuration.md `price`).
    pub cost_usd: f64,
    /// Calls of models without a price: their cost is not in `cost_usd`.
    pub unpriced_calls: u64,
    /// Calls whose provider reported no usage: their tokens (and cost) are reagent's estimate.
    pub estimated_calls: u64,
}

impl From<llm::Usage> for Usage {
    fn from(u: llm::Usage) -> Self {
        Self {
            prompt_tokens: u.prompt_tokens,
            completion_tokens: u.completion_tokens,
            total_tokens: u.total_tokens,
            llm_calls: u.llm_calls,
            cache_read_tokens: u.cache_read_tokens,
            cache_write_tokens: u.cache_write_tokens,
            cost_usd: u.cost_usd.usd(),
            unpriced_calls: u.unpriced_calls,
            estimated_calls: u.estimated_calls,
        }
    }
}

/// A run's state (docs/api.md); a live run's counters are current.
#[derive(Debug, Serialize, ToSchema)]
pub struct Run {
    pub id: Uuid,
    pub conversation_id: Uuid,
    pub status: RunStatus,
    pub mode: Mode,
    pub model: String,
    pub iterations: u32,
    pub tool_calls: u32,
    pub usage: Usage,
    pub started_at: DateTime<Utc>,
    #[schema(required)]
    pub finished_at: Option<DateTime<Utc>>,
    #[schema(required)]
    pub error: Option<String>,
}

impl From<store::RunRow> for Run {
    fn from(r: store::RunRow) -> Self {
        Self {
            id: r.id,
            conversation_id: r.conversation_id,
            status: r.status,
            mode: r.mode,
            model: r.model,
            iterations: r.iterations,
            tool_calls: r.tool_calls,
            usage: r.usage.into(),
            started_at: r.started_at,
            finished_at: r.finished_at,
            error: r.error,
        }
    }
}

/// A run started without `Accept: text/event-stream`.
#[derive(Debug, Serialize, ToSchema)]
pub struct RunStarted {
    pub run_id: Uuid,
    pub conversation_id: Uuid,
    /// Where its SSE stream is (`/api/runs/{run_id}/events`).
    pub events_url: String,
}

/// A cancellation was requested (docs/api.md).
#[derive(Debug, Serialize, ToSchema)]
pub struct Cancelling {
    pub run_id: Uuid,
    /// Always `true`.
    pub cancelling: bool,
}

/// An accepted follow-up (docs/api.md).
#[derive(Debug, Serialize, ToSchema)]
pub struct InterruptAccepted {
    pub id: Uuid,
    pub run_id: Uuid,
    /// Present (`true`) when the loop had closed: the follow-up becomes the next run's query.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = bool)]
    pub next_run: Option<bool>,
}

impl From<crate::runs::Accepted> for InterruptAccepted {
    fn from(a: crate::runs::Accepted) -> Self {
        Self {
            id: a.id,
            run_id: a.run_id,
            next_run: a.next_run.then_some(true),
        }
    }
}

/// A pending follow-up was taken back.
#[derive(Debug, Serialize, ToSchema)]
pub struct Recalled {
    /// Always `true`.
    pub recalled: bool,
}

/// A paused tool call waiting for a reviewer (docs/api.md).
#[derive(Debug, Serialize, ToSchema)]
pub struct Approval {
    pub id: Uuid,
    pub run_id: String,
    pub conversation_id: String,
    pub tool: String,
    /// The call's arguments, as the model wrote them.
    pub arguments: Value,
    pub requested_at: DateTime<Utc>,
}

impl From<(Uuid, ApprovalInfo)> for Approval {
    fn from((id, info): (Uuid, ApprovalInfo)) -> Self {
        Self {
            id,
            run_id: info.run_id,
            conversation_id: info.conversation_id,
            tool: info.tool,
            arguments: info.arguments,
            requested_at: info.requested_at,
        }
    }
}

/// A reviewer's decision, delivered.
#[derive(Debug, Serialize, ToSchema)]
pub struct Decided {
    pub id: Uuid,
    pub approved: bool,
}
