//! `/api/conversations` (docs/api.md): create, list (keyset pages, newest first), show with
//! messages, rename, delete (the run manager cancels an active run first). Every call is
//! scoped by the caller's [`Owner`], so another tenant's conversation is simply not found.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::{Extension, Json};
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use super::auth::Owner;
use super::error::{ApiError, ApiJson, ApiPath, ApiQuery};
use super::state::AppState;
use super::views::{Conversation, ConversationDetail, ConversationPage, ErrorBody};
use crate::domain::Engine;
use crate::store::NewConversation;
/// Page size when `limit` is absent.
const DEFAULT_PAGE: u32 = 50;
/// The longest search text, in characters, and the most words it may hold: each word is one
/// more index lookup in the search statement.
const MAX_QUERY_CHARS: usize = 200;
const MAX_QUERY_WORDS: usize = 10;

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateConversation {
    #[schema(max_length = 200)]
    pub title: Option<String>,
    /// A configured model name; the default model when absent.
    pub model: Option<String>,
    pub system_prompt: Option<String>,
    /// Restricts the conversation's runs to these tools.
    pub tools: Option<Vec<String>>,
    /// A configured agent (`GET /api/agents`): its model, system prompt, tools and iteration
    /// cap apply to the conversation's runs where the fields above leave them unset.
    pub agent: Option<String>,
    /// A version of the API agent `agent` (`GET /api/agents/{name}/versions`); its latest when
    /// absent. The conversation keeps running on it.
    #[schema(minimum = 1)]
    pub agent_version: Option<u32>,
    /// `react`, `dag` or `auto`; `REAGENT_DEFAULT_ENGINE` when absent.
    #[schema(value_type = Option<String>)]
    pub engine: Option<Engine>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RenameConversation {
    #[schema(max_length = 200)]
    pub title: String,
}

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ForkConversation {
    /// A finished run of the conversation: the fork holds the history up to and including its
    /// turn. Without it the fork has no history.
    pub until_run_id: Option<Uuid>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListParams {
    /// Page size; clamped to 1..=200.
    pub limit: Option<u32>,
    /// The `next_before` cursor of the previous page.
    #[param(
        pattern = r"^[+-]?[0-9]{1,18}_[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
    )]
    pub before: Option<String>,
    /// Search: only conversations whose title or messages contain every word of this text
    /// (anywhere, in any case); at most 10 words. Blank lists them all.
    #[param(max_length = 200)]
    pub q: Option<String>,
}

/// The distinct words of a search text, or why it is refused.
fn search_words(q: &str) -> Result<Vec<String>, ApiError> {
    if q.chars().count() > MAX_QUERY_CHARS {
        return Err(ApiError::invalid(format!(
            "q: at most {MAX_QUERY_CHARS} characters"
        )));
    }
    let mut words: Vec<String> = Vec::new();
    for word in q.split_whitespace() {
        if !words.iter().any(|w| w == word) {
            words.push(word.to_string());
        }
    }
    if words.len() > MAX_QUERY_WORDS {
        return Err(ApiError::invalid(format!(
            "q: at most {MAX_QUERY_WORDS} words"
        )));
    }
    Ok(words)
}

impl From<CreateConversation> for NewConversation {
    fn from(body: CreateConversation) -> Self {
        NewConversation {
            title: body.title,
            model: body.model,
            system_prompt: body.system_prompt,
            tools: body.tools,
            agent: body.agent,
            agent_version: body.agent_version,
            engine: body.engine,
        }
    }
}

#[utoipa::path(post, path = "/api/conversations", tag = "conversations",
    summary = "Create a conversation",
    request_body = CreateConversation,
    responses((status = 201, description = "The new conversation", body = Conversation),
              (status = 400, description = "`invalid_request`: unknown model or tool, title too long", body = ErrorBody),
              (status = 404, description = "`not_found`: an `agent` the caller has not (unknown, deleted or another tenant's)", body = ErrorBody)))]
pub async fn create(
    State(state): State<AppState>,
    Extension(owner): Extension<Owner>,
    ApiJson(body): ApiJson<CreateConversation>,
) -> Result<impl IntoResponse, ApiError> {
    let conversation = state
        .runs
        .create_conversation(&owner.0, body.into())
        .await?;
    Ok((StatusCode::CREATED, Json(Conversation::from(conversation))))
}

#[utoipa::path(get, path = "/api/conversations", tag = "conversations", operation_id = "list_conversations",
    summary = "List or search the caller's conversations, newest first", params(ListParams),
    responses((status = 200, description = "One page; pass `next_before` as `before` (and the same `q`) for the next", body = ConversationPage),
              (status = 400, description = "`invalid_request`: malformed cursor, `q` too long or of too many words", body = ErrorBody)))]
pub async fn list(
    State(state): State<AppState>,
    Extension(owner): Extension<Owner>,
    ApiQuery(params): ApiQuery<ListParams>,
) -> Result<Json<ConversationPage>, ApiError> {
    let limit = params.limit.unwrap_or(DEFAULT_PAGE);
    let words = search_words(params.q.as_deref().unwrap_or_default())?;
    let (items, next_before) = if words.is_empty() {
        state
            .store
            .list_conversations(&owner.0, limit, params.before)
            .await?
    } else {
        state
            .store
            .search_conversations(&owner.0, &words, limit, params.before)
            .await?
    };
    Ok(Json(ConversationPage {
        items: items.into_iter().map(Conversation::from).collect(),
        next_before,
    }))
}

#[utoipa::path(get, path = "/api/conversations/{id}", tag = "conversations", operation_id = "show_conversation",
    params(("id" = Uuid, Path, description = "Conversation id")),
    summary = "A conversation with its messages",
    responses((status = 200, description = "The conversation and its messages, oldest first", body = ConversationDetail)))]
pub async fn show(
    State(state): State<AppState>,
    Extension(owner): Extension<Owner>,
    ApiPath(id): ApiPath<Uuid>,
) -> Result<Json<ConversationDetail>, ApiError> {
    let (conversation, messages) = state.runs.conversation_with_messages(&owner.0, id).await?;
    Ok(Json(ConversationDetail {
        conversation: conversation.into(),
        messages: messages.into_iter().map(Into::into).collect(),
    }))
}

#[utoipa::path(patch, path = "/api/conversations/{id}", tag = "conversations",
    params(("id" = Uuid, Path, description = "Conversation id")),
    summary = "Rename a conversation",
    request_body = RenameConversation,
    responses((status = 200, description = "The renamed conversation", body = Conversation)))]
pub async fn rename(
    State(state): State<AppState>,
    Extension(owner): Extension<Owner>,
    ApiPath(id): ApiPath<Uuid>,
    ApiJson(body): ApiJson<RenameConversation>,
) -> Result<Json<Conversation>, ApiError> {
    let renamed = state
        .runs
        .rename_conversation(&owner.0, id, &body.title)
        .await?;
    Ok(Json(renamed.into()))
}

#[utoipa::path(delete, path = "/api/conversations/{id}", tag = "conversations",
    params(("id" = Uuid, Path, description = "Conversation id")),
    summary = "Delete a conversation (its active run is cancelled first)",
    responses((status = 204, description = "Deleted")))]
pub async fn remove(
    State(state): State<AppState>,
    Extension(owner): Extension<Owner>,
    ApiPath(id): ApiPath<Uuid>,
) -> Result<StatusCode, ApiError> {
    state.runs.delete_conversation(&owner.0, id).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(post, path = "/api/conversations/{id}/fork", tag = "conversations",
    params(("id" = Uuid, Path, description = "Conversation id")),
    summary = "Fork a conversation at one of its runs",
    request_body = ForkConversation,
    responses((status = 201, description = "The new conversation; `forked_from` names the original", body = Conversation),
              (status = 400, description = "`invalid_request`: a malformed body", body = ErrorBody),
              (status = 404, description = "`not_found`: no such conversation of the caller's, or `until_run_id` is not a run of it", body = ErrorBody),
              (status = 409, description = "`conflict`: the `until_run_id` run has not finished", body = ErrorBody)))]
pub async fn fork(
    State(state): State<AppState>,
    Extension(owner): Extension<Owner>,
    ApiPath(id): ApiPath<Uuid>,
    ApiJson(body): ApiJson<ForkConversation>,
) -> Result<impl IntoResponse, ApiError> {
    let fork = state
        .runs
        .fork_conversation(&owner.0, id, body.until_run_id)
        .await?;
    Ok((StatusCode::CREATED, Json(Conversation::from(fork))))
}
