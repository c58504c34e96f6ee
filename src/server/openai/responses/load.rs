//! A stored response: its run and request read back ([`load`]), and its object as of the
//! events stored so far ([`snapshot`]), the same on every instance.

use std::sync::Arc;

use futures::StreamExt;
use serde_json::Value;
use uuid::Uuid;

use super::encode::Encoder;
use super::object::Context;
use super::request::{response_run_id, Echo};
use crate::runs::replay::stored_events;
use crate::server::openai::OpenAiError;
use crate::server::state::AppState;
use crate::server::ApiError;
use crate::store::RunRow;

/// 404 in OpenAI's shape for a response id that is unknown, malformed or another tenant's.
pub fn response_not_found(id: &str) -> OpenAiError {
    OpenAiError::not_found(None, format!("Response with id '{id}' not found."))
}

/// The context every object and event of a response repeats.
pub fn context(row: &RunRow, echo: Echo) -> Arc<Context> {
    Arc::new(Context {
        run_id: row.id,
        conversation_id: row.conversation_id,
        started_ms: row.started_at.timestamp_millis(),
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
    let row = match state.runs.run(owner, run_id).await {
        Ok(row) => row,
        Err(crate::runs::RunError::NotFound) => return Err(response_not_found(id)),
        Err(e) => return Err(ApiError::from(e).into()),
    };
    let request = state
        .store
        .response_request(run_id)
        .await
        .map_err(ApiError::from)?
        .ok_or_else(|| response_not_found(id))?;
    let echo: Echo = serde_json::from_str(&request)
        .map_err(|e| ApiError::Internal(format!("unreadable response request: {e}")))?;
    Ok((row.clone(), context(&row, echo)))
}

/// The response object as of the run's stored events.
pub async fn snapshot(state: &AppState, ctx: &Arc<Context>) -> Value {
    let mut encoder = Encoder::new(ctx.clone());
    let mut events = stored_events(state.store.clone(), ctx.run_id, 0, u64::MAX);
    while let Some(ev) = events.next().await {
        encoder.event(&ev);
    }
    encoder.response()
}
