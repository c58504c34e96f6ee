//! A stored response: `GET /v1/responses/{id}` (the object, or with `stream=true` its event
//! stream replayed after `starting_after` and followed live — never cancelling on
//! disconnect), `POST …/cancel`, `DELETE …` and `GET …/input_items`.

use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde::Deserialize;
use serde_json::{json, Value};

use super::body::sse;
use super::encode::Encoder;
use super::load::{load, response_not_found, snapshot};
use crate::domain::RunStatus;
use crate::runs::RunError;
use crate::server::openai::OpenAiError;
use crate::server::state::AppState;
use crate::server::Owner;

#[derive(Debug, Deserialize)]
pub struct RetrieveParams {
    stream: Option<bool>,
    starting_after: Option<u64>,
}

#[derive(Debug, Deserialize)]
pub struct ListParams {
    order: Option<String>,
    limit: Option<u32>,
    after: Option<String>,
}

fn query<T>(q: Result<Query<T>, QueryRejection>) -> Result<T, OpenAiError> {
    q.map(|Query(t)| t)
        .map_err(|e| OpenAiError::invalid(None, format!("Invalid query string: {}", e.body_text())))
}

pub async fn retrieve(
    State(state): State<AppState>,
    Extension(owner): Extension<Owner>,
    Path(id): Path<String>,
    params: Result<Query<RetrieveParams>, QueryRejection>,
) -> Result<Response, OpenAiError> {
    let params = query(params)?;
    let (row, ctx) = load(&state, &owner.0, &id).await?;
    if params.stream != Some(true) {
        return Ok(Json(snapshot(&state, &ctx).await).into_response());
    }
    let events = state
        .runs
        .events(&owner.0, row.id, 0)
        .await
        .map_err(|e| not_found_as(e, &id))?;
    let encoder = Encoder::new(ctx);
    let subscriber = state.metrics.sse_subscriber();
    Ok(sse(
        events,
        encoder,
        params.starting_after,
        None,
        state.keep_alive,
        subscriber,
    ))
}

fn not_found_as(e: RunError, id: &str) -> OpenAiError {
    match e {
        RunError::NotFound => response_not_found(id),
        other => other.into(),
    }
}

/// Cancels a running run and waits (bounded) for its end to be stored.
async fn stop(state: &AppState, owner: &str, id: &str) -> Result<(), OpenAiError> {
    let (row, _) = load(state, owner, id).await?;
    if row.status != RunStatus::Running {
        return Ok(());
    }
    state
        .runs
        .stop_and_wait(owner, row.id)
        .await
        .map_err(|e| not_found_as(e, id))
}

/// `POST /v1/responses/{id}/cancel`: the response once cancelled (a finished one unchanged).
pub async fn cancel(
    State(state): State<AppState>,
    Extension(owner): Extension<Owner>,
    Path(id): Path<String>,
) -> Result<Json<Value>, OpenAiError> {
    stop(&state, &owner.0, &id).await?;
    let (_, ctx) = load(&state, &owner.0, &id).await?;
    Ok(Json(snapshot(&state, &ctx).await))
}

/// `DELETE /v1/responses/{id}`: the run, its events and the messages it wrote (a running one
/// is cancelled first).
pub async fn delete(
    State(state): State<AppState>,
    Extension(owner): Extension<Owner>,
    Path(id): Path<String>,
) -> Result<Json<Value>, OpenAiError> {
    let (row, _) = load(&state, &owner.0, &id).await?;
    state
        .runs
        .delete_run(&owner.0, row.id)
        .await
        .map_err(|e| not_found_as(e, &id))?;
    Ok(Json(
        json!({"id": id, "object": "response", "deleted": true}),
    ))
}

/// `GET /v1/responses/{id}/input_items`: the request's input, as OpenAI lists it (`order`
/// `desc` by default, `limit` 1–100, default 20, `after` an item id).
pub async fn input_items(
    State(state): State<AppState>,
    Extension(owner): Extension<Owner>,
    Path(id): Path<String>,
    params: Result<Query<ListParams>, QueryRejection>,
) -> Result<Json<Value>, OpenAiError> {
    let params = query(params)?;
    let (row, ctx) = load(&state, &owner.0, &id).await?;
    let mut items: Vec<Value> = ctx
        .echo
        .input
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let mut item = item.clone();
            item["id"] = format!("msg_{}_in{i}", row.id.simple()).into();
            item
        })
        .collect();
    match params.order.as_deref() {
        None | Some("desc") => items.reverse(),
        Some("asc") => {}
        Some(_) => {
            return Err(OpenAiError::invalid(
                Some("order"),
                "'order' is 'asc' or 'desc'",
            ))
        }
    }
    if let Some(after) = &params.after {
        let at = items.iter().position(|i| i["id"] == after.as_str());
        items = at.map_or_else(Vec::new, |at| items.split_off(at + 1));
    }
    let limit = params.limit.unwrap_or(20).clamp(1, 100) as usize;
    let has_more = items.len() > limit;
    items.truncate(limit);
    Ok(Json(json!({
        "object": "list",
        "data": items,
        "first_id": items.first().map(|i| i["id"].clone()),
        "last_id": items.last().map(|i| i["id"].clone()),
        "has_more": has_more,
    })))
}
