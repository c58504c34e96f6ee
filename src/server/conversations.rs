//! `/api/conversations` (SPEC §3.1): create, list (keyset pages, newest first), show with
//! messages, rename, delete (cancelling an active run first). Every store call is scoped by
//! the caller's [`Owner`], so another tenant's conversation is simply not found.

use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::{Extension, Json};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use super::error::{ApiError, ApiJson, ApiPath, ApiQuery};
use super::runs::check_at_most;
use super::{AppState, Owner};
use crate::store::{Conversation, NewConversation, Store, StoredMessage};

/// How long `DELETE` waits for a cancelled run to write its final state.
const CANCEL_WAIT: Duration = Duration::from_secs(5);
/// Page size when `limit` is absent.
const DEFAULT_PAGE: u32 = 50;

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
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RenameConversation {
    #[schema(max_length = 200)]
    pub title: String,
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
}

#[derive(Debug, Serialize)]
pub struct ConversationPage {
    pub items: Vec<Conversation>,
    pub next_before: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct ConversationDetail {
    #[serde(flatten)]
    pub conversation: Conversation,
    pub messages: Vec<StoredMessage>,
}

/// Longest conversation title (a list entry, not a document).
pub const MAX_TITLE_CHARS: usize = 200;

/// Checks a new conversation's model and tools against what is configured.
fn validate(state: &AppState, body: &CreateConversation) -> Result<(), ApiError> {
    let title = body.title.as_deref().unwrap_or_default();
    check_at_most("title", title, MAX_TITLE_CHARS)?;
    // Every run sends it in full and it is pinned: one as large as the query limit is already
    // a quarter of a 128k-token window.
    check_at_most(
        "system_prompt",
        body.system_prompt.as_deref().unwrap_or_default(),
        state.config.server.max_query_chars,
    )?;
    if let Some(model) = &body.model {
        if state.models.get(model).is_none() {
            return Err(ApiError::invalid(format!("unknown model '{model}'")));
        }
    }
    if let Some(tools) = &body.tools {
        let known = state.runs.tools();
        if let Some(bad) = tools.iter().find(|t| known.get(t).is_none()) {
            return Err(ApiError::invalid(format!("unknown tool '{bad}'")));
        }
    }
    Ok(())
}

/// Creates a conversation of `owner`.
pub async fn create_for(
    state: &AppState,
    owner: &Owner,
    body: CreateConversation,
) -> Result<Conversation, ApiError> {
    let new = validated(state, body)?;
    Ok(state.store.create_conversation(&owner.0, new).await?)
}

/// A validated new conversation of `owner`, not stored yet (`POST /api/chat` stores it with
/// its first run).
pub fn draft_for(
    state: &AppState,
    owner: &Owner,
    body: CreateConversation,
) -> Result<Conversation, ApiError> {
    let new = validated(state, body)?;
    Ok(Store::draft_conversation(&owner.0, new))
}

/// The request body checked by [`validate`], as the store's input.
fn validated(state: &AppState, body: CreateConversation) -> Result<NewConversation, ApiError> {
    validate(state, &body)?;
    Ok(NewConversation {
        title: body.title,
        model: body.model,
        system_prompt: body.system_prompt,
        tools: body.tools,
    })
}

/// The caller's conversation or 404.
pub async fn owned(state: &AppState, owner: &Owner, id: Uuid) -> Result<Conversation, ApiError> {
    state
        .store
        .get_conversation(&owner.0, id)
        .await?
        .ok_or(ApiError::NotFound)
}

#[utoipa::path(post, path = "/api/conversations", tag = "conversations",
    request_body = CreateConversation,
    responses((status = 201, description = "The new conversation", body = Value),
              (status = 400, description = "Invalid request")))]
pub async fn create(
    State(state): State<AppState>,
    Extension(owner): Extension<Owner>,
    ApiJson(body): ApiJson<CreateConversation>,
) -> Result<impl IntoResponse, ApiError> {
    let conversation = create_for(&state, &owner, body).await?;
    Ok((StatusCode::CREATED, Json(conversation)))
}

#[utoipa::path(get, path = "/api/conversations", tag = "conversations", operation_id = "list_conversations", params(ListParams),
    responses((status = 200, description = "`{items, next_before}`, newest first", body = Value)))]
pub async fn list(
    State(state): State<AppState>,
    Extension(owner): Extension<Owner>,
    ApiQuery(params): ApiQuery<ListParams>,
) -> Result<Json<ConversationPage>, ApiError> {
    let (items, next_before) = state
        .store
        .list_conversations(
            &owner.0,
            params.limit.unwrap_or(DEFAULT_PAGE),
            params.before,
        )
        .await?;
    Ok(Json(ConversationPage { items, next_before }))
}

#[utoipa::path(get, path = "/api/conversations/{id}", tag = "conversations", operation_id = "show_conversation",
    params(("id" = Uuid, Path, description = "Conversation id")),
    responses((status = 200, description = "The conversation and its messages", body = Value),
              (status = 404, description = "Unknown or another tenant's")))]
pub async fn show(
    State(state): State<AppState>,
    Extension(owner): Extension<Owner>,
    ApiPath(id): ApiPath<Uuid>,
) -> Result<Json<ConversationDetail>, ApiError> {
    let conversation = owned(&state, &owner, id).await?;
    let messages = state.store.list_messages(id).await?;
    Ok(Json(ConversationDetail {
        conversation,
        messages,
    }))
}

#[utoipa::path(patch, path = "/api/conversations/{id}", tag = "conversations",
    params(("id" = Uuid, Path, description = "Conversation id")),
    request_body = RenameConversation,
    responses((status = 200, description = "The renamed conversation", body = Value),
              (status = 400, description = "Invalid request"),
              (status = 404, description = "Unknown or another tenant's")))]
pub async fn rename(
    State(state): State<AppState>,
    Extension(owner): Extension<Owner>,
    ApiPath(id): ApiPath<Uuid>,
    ApiJson(body): ApiJson<RenameConversation>,
) -> Result<Json<Conversation>, ApiError> {
    check_at_most("title", &body.title, MAX_TITLE_CHARS)?;
    state
        .store
        .rename_conversation(&owner.0, id, &body.title)
        .await?
        .map(Json)
        .ok_or(ApiError::NotFound)
}

#[utoipa::path(delete, path = "/api/conversations/{id}", tag = "conversations",
    params(("id" = Uuid, Path, description = "Conversation id")),
    responses((status = 204, description = "Deleted (its active run cancelled first)"),
              (status = 404, description = "Unknown or another tenant's")))]
pub async fn remove(
    State(state): State<AppState>,
    Extension(owner): Extension<Owner>,
    ApiPath(id): ApiPath<Uuid>,
) -> Result<StatusCode, ApiError> {
    let conversation = owned(&state, &owner, id).await?;
    cancel_and_wait(&state, &owner, conversation.id).await;
    if state.store.delete_conversation(&owner.0, id).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::NotFound)
    }
}

/// Cancels the conversation's active run and waits (bounded) until its log closes, so the
/// run does not write into rows that are about to be deleted.
async fn cancel_and_wait(state: &AppState, owner: &Owner, conversation_id: Uuid) {
    let Some(run_id) = state.runs.active_run_of(conversation_id) else {
        return;
    };
    state.runs.cancel_conversation(conversation_id);
    let Some(live) = state.runs.live_run(&owner.0, run_id) else {
        return;
    };
    let wait = async move { live.finished().await };
    if tokio::time::timeout(CANCEL_WAIT, wait).await.is_err() {
        tracing::warn!(%run_id, "cancelled run did not stop before its conversation was deleted");
    }
}
