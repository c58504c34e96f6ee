//! `GET /ai-sdk/{agent}/{id}/stream` (docs/protocols.md): what the AI SDK's
//! `DefaultChatTransport.reconnectToStream` asks after a reload or a dropped connection (`useChat`
//! with `resume: true`). The chat's active run is replayed from its first event, as the
//! transport expects by default (`resumeStreamIsReplay`), and followed to its end; 204 when the
//! chat has no active run (or does not exist yet, which is what a new chat asks).

use std::collections::HashSet;

use axum::extract::State;
use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use serde_json::json;

use super::encode::AiSdk;
use super::STREAM_HEADER;
use crate::config::IMPLICIT_AGENT;
use crate::runs::RunError;
use crate::server::error::ApiPath;
use crate::server::frontends::body::{data, encoded_response};
use crate::server::frontends::threads::{conversation_of, require_agent};
use crate::server::state::AppState;
use crate::server::{ApiError, Owner};

pub async fn stream(
    State(state): State<AppState>,
    Extension(owner): Extension<Owner>,
    ApiPath((agent, chat)): ApiPath<(String, String)>,
) -> Result<Response, ApiError> {
    require_agent(&state, &owner.0, &agent).await?;
    let id = conversation_of(&owner.0, &chat);
    let conv = match state.runs.owned(&owner.0, id).await {
        Ok(conv) => conv,
        // Another tenant's conversation is not found, as on `POST`.
        Err(RunError::NotFound) if state.runs.conversation_exists(id).await? => {
            return Err(ApiError::NotFound)
        }
        Err(RunError::NotFound) => return Ok(StatusCode::NO_CONTENT.into_response()),
        Err(e) => return Err(e.into()),
    };
    let own = conv.agent.as_deref().unwrap_or(IMPLICIT_AGENT);
    if own != agent {
        return Err(ApiError::Conflict(format!(
            "the chat belongs to agent '{own}', not '{agent}'"
        )));
    }
    let Some(run_id) = conv.active_run_id else {
        return Ok(StatusCode::NO_CONTENT.into_response());
    };
    let events = match state.runs.events(&owner.0, run_id, 0).await {
        Ok(events) => events,
        // Ended and cleaned up between the two reads: nothing active any more.
        Err(RunError::NotFound) => return Ok(StatusCode::NO_CONTENT.into_response()),
        Err(e) => return Err(e.into()),
    };
    let run = run_id.to_string();
    let open: HashSet<String> = state
        .runs
        .approvals_of(&owner.0)
        .await?
        .into_iter()
        .filter(|(_, info)| info.run_id == run)
        .map(|(id, _)| id.to_string())
        .collect();
    let mut first = String::new();
    data(
        &mut first,
        &json!({"type": "start", "messageId": format!("msg-{}", run_id.simple()),
                "messageMetadata": {"runId": run_id, "conversationId": conv.id}}),
    );
    data(&mut first, &json!({"type": "start-step"}));
    Ok(encoded_response(
        &state,
        first,
        events,
        AiSdk::replay(run_id, open),
        Some((
            HeaderName::from_static(STREAM_HEADER),
            HeaderValue::from_static("v1"),
        )),
    ))
}
