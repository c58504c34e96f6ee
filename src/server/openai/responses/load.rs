//! A stored response: its run and request read back ([`load`]), and its object as of the
//! events stored so far ([`snapshot`]), the same on every instance.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use futures::StreamExt;
use serde_json::Value;
use uuid::Uuid;

use super::encode::Encoder;
use super::object::Context;
use super::request::{response_run_id, Echo};
use crate::runs::RunError;
use crate::server::openai::OpenAiError;
use crate::server::state::AppState;
use crate::server::ApiError;
use crate::store::RunRow;

/// 404 in OpenAI's shape for a response id that is unknown, malformed or another tenant's.
pub fn response_not_found(id: &str) -> OpenAiError {
    OpenAiError::not_found(None, format!("Response with id '{id}' not found."))
}

/// The context every object and event of a response repeats.
pub fn context(
    run_id: Uuid,
    conversation_id: Uuid,
    started_at: DateTime<Utc>,
    echo: Echo,
) -> Arc<Context> {
    Arc::new(Context {
        run_id,
        conversation_id,
        started_ms: started_at.timestamp_millis(),
        echo,
    })
}

/// `owner`'s response `id`: its run (with a live run's counters) and its context.
pub async fn load(
    state: &AppState,
    owner: &str,
    id: &str,
) -> Result<(RunRow, Arc<Context>), OpenAiError> {
    let run_id: Uuid = response_run_id(id).ok_or_else(|| response_not_found(id))?;
    let (row, request) = match state.runs.run_with_record(owner, run_id).await {
        Ok((row, Some(request))) => (row, request),
        Ok((_, None)) | Err(RunError::NotFound) => return Err(response_not_found(id)),
        Err(e) => return Err(ApiError::from(e).into()),
    };
    let echo: Echo = serde_json::from_str(&request)
        .map_err(|e| ApiError::Internal(format!("unreadable response request: {e}")))?;
    let ctx = context(row.id, row.conversation_id, row.started_at, echo);
    Ok((row, ctx))
}

/// The response object as of the run's stored events.
pub async fn snapshot(state: &AppState, ctx: &Arc<Context>) -> Value {
    let mut encoder = Encoder::new(ctx.clone());
    let mut events = state.runs.stored_events(ctx.run_id, 0);
    while let Some(ev) = events.next().await {
        encoder.event(&ev);
    }
    encoder.response()
}
