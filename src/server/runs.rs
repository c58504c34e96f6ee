//! Runs and interrupts (SPEC §3.2, §3.3): start (202 or SSE by `Accept`), the one-request
//! `POST /api/chat`, status, event replay/follow, cancel, and the interrupt queue. Handlers
//! validate the input, call the [`crate::runs::RunManager`] and map the result; the run itself
//! belongs to the manager, so a vanished SSE client never stops it.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde::Deserialize;
use serde_json::{json, Value};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use super::conversations::{draft_for, owned, CreateConversation};
use super::error::{ApiError, ApiJson, ApiPath, ApiQuery};
use super::sse::{resume_point, sse_response, wants_event_stream};
use super::{AppState, Owner};
use crate::agent::Mode;
use crate::runs::{LiveRun, StartRun};
use crate::store::{Conversation, RunRow};

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StartRunBody {
    pub query: String,
    pub model: Option<String>,
    /// `auto` (default), `native` or `json`.
    pub mode: Option<String>,
    #[schema(minimum = 1)]
    #[serde(default, deserialize_with = "whole_number")]
    pub max_iterations: Option<u32>,
}

/// A JSON integer, also written as a float with no fraction (`5.0`): JSON Schema counts both as
/// integers, and clients (JavaScript among them) may send either.
fn whole_number<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    let Some(n) = Option::<serde_json::Number>::deserialize(d)? else {
        return Ok(None);
    };
    let whole = match (n.as_u64(), n.as_f64()) {
        (Some(u), _) => Some(u),
        (None, Some(f)) if f.fract() == 0.0 && (0.0..=f64::from(u32::MAX)).contains(&f) => {
            Some(f as u64)
        }
        _ => None,
    };
    whole
        .and_then(|u| u32::try_from(u).ok())
        .map(Some)
        .ok_or_else(|| {
            serde::de::Error::custom(format!("{n} is not a whole number in 0..=4294967295"))
        })
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ChatBody {
    pub query: String,
    pub conversation_id: Option<Uuid>,
    pub model: Option<String>,
    pub mode: Option<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct InterruptBody {
    pub content: String,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct EventsParams {
    /// Replay events with an id greater than this (the `Last-Event-ID` header wins).
    #[serde(default, deserialize_with = "trimmed_id")]
    pub after: Option<u64>,
}

/// An event id, with surrounding spaces allowed as in the `Last-Event-ID` header (where HTTP
/// strips them), so `?after=%203` and `Last-Event-ID:  3` mean the same.
fn trimmed_id<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    let Some(text) = Option::<String>::deserialize(d)? else {
        return Ok(None);
    };
    text.trim()
        .parse()
        .map(Some)
        .map_err(|_| serde::de::Error::custom("after must be a non-negative integer"))
}

/// Non-empty, at most `max` characters (SPEC §3.7), and storable ([`check_storable`]).
pub fn check_text(field: &str, text: &str, max: usize) -> Result<(), ApiError> {
    check_storable(field, text)?;
    if text.trim().is_empty() {
        return Err(ApiError::invalid(format!("{field} must not be empty")));
    }
    check_at_most(field, text, max)
}

/// At most `max` characters and storable; may be empty.
pub fn check_at_most(field: &str, text: &str, max: usize) -> Result<(), ApiError> {
    check_storable(field, text)?;
    if text.chars().count() > max {
        return Err(ApiError::invalid(format!(
            "{field} is longer than {max} characters"
        )));
    }
    Ok(())
}

/// Text the service stores must not contain NUL (U+0000): PostgreSQL's `text` cannot hold
/// it, so it would fail there as a 500 while SQLite took it; refused on both as a 400.
pub fn check_storable(field: &str, text: &str) -> Result<(), ApiError> {
    if text.contains('\0') {
        return Err(ApiError::invalid(format!(
            "{field} must not contain NUL (U+0000) characters"
        )));
    }
    Ok(())
}

/// `auto`/absent → the engine decides; `native`/`json` force a mode.
pub fn parse_mode(mode: Option<&str>) -> Result<Option<Mode>, ApiError> {
    match mode {
        None | Some("auto") => Ok(None),
        Some("native") => Ok(Some(Mode::Native)),
        Some("json") => Ok(Some(Mode::Json)),
        Some(other) => Err(ApiError::invalid(format!(
            "unknown mode '{other}' (expected auto, native or json)"
        ))),
    }
}

/// Validates and starts a run of `conversation`.
async fn launch(
    state: &AppState,
    owner: &Owner,
    conversation: &Conversation,
    request: StartRun,
) -> Result<std::sync::Arc<LiveRun>, ApiError> {
    launch_run(state, owner, conversation, request, false).await
}

/// [`launch`]; with `new_conversation`, `conversation` is a draft stored with the run.
async fn launch_run(
    state: &AppState,
    owner: &Owner,
    conversation: &Conversation,
    request: StartRun,
    new_conversation: bool,
) -> Result<std::sync::Arc<LiveRun>, ApiError> {
    check_text("query", &request.query, state.config.server.max_query_chars)?;
    if request.max_iterations == Some(0) {
        return Err(ApiError::invalid("max_iterations must be at least 1"));
    }
    // Starting a run takes several awaits (history, run row) after the conversation's slot is
    // taken. A client that hangs up makes hyper drop this handler's future; if that happened
    // mid-start, the slot stayed taken and the run row `running` with no task behind it, so the
    // conversation answered 409 until a restart. The start therefore runs in its own task,
    // which the request cannot cancel: once begun, a run is fully started (and counted).
    let (state, owner, conversation) = (state.clone(), owner.0.clone(), conversation.clone());
    let start = tokio::spawn(async move {
        let live = if new_conversation {
            state
                .runs
                .start_in_new(&owner, &conversation, request)
                .await?
        } else {
            state.runs.start(&owner, &conversation, request).await?
        };
        tracing::info!(run_id = %live.id, conversation_id = %live.conversation_id, "run started");
        state.metrics.run_started();
        Ok::<_, ApiError>(live)
    });
    start
        .await
        .map_err(|e| ApiError::Internal(format!("the run start task failed: {e}")))?
}

/// The live run's stream from its first event.
fn stream_of(state: &AppState, live: &LiveRun) -> Response {
    sse_response(
        state.runs.live_events(live, 0),
        state.keep_alive,
        &state.metrics,
    )
}

#[utoipa::path(post, path = "/api/conversations/{id}/runs", tag = "runs",
    params(("id" = Uuid, Path, description = "Conversation id")),
    request_body = StartRunBody,
    responses((status = 202, description = "`{run_id, conversation_id, events_url}`", body = Value),
              (status = 200, description = "With `Accept: text/event-stream`: the run's SSE stream", content_type = "text/event-stream"),
              (status = 400, description = "Empty or too long query, unknown mode or model"),
              (status = 404, description = "Unknown conversation"),
              (status = 409, description = "`run_active`")))]
pub async fn start(
    State(state): State<AppState>,
    Extension(owner): Extension<Owner>,
    ApiPath(id): ApiPath<Uuid>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<StartRunBody>,
) -> Result<Response, ApiError> {
    let mode = parse_mode(body.mode.as_deref())?;
    let conversation = owned(&state, &owner, id).await?;
    let request = StartRun {
        query: body.query,
        model: body.model,
        mode,
        max_iterations: body.max_iterations,
    };
    let live = launch(&state, &owner, &conversation, request).await?;
    if wants_event_stream(&headers) {
        return Ok(stream_of(&state, &live));
    }
    let body = json!({
        "run_id": live.id,
        "conversation_id": live.conversation_id,
        "events_url": format!("/api/runs/{}/events", live.id),
    });
    Ok((StatusCode::ACCEPTED, Json(body)).into_response())
}

#[utoipa::path(post, path = "/api/chat", tag = "runs", request_body = ChatBody,
    responses((status = 200, description = "The run's SSE stream (the conversation id is in `start`)", content_type = "text/event-stream"),
              (status = 400, description = "Invalid request"),
              (status = 404, description = "Unknown conversation"),
              (status = 409, description = "`run_active`")))]
pub async fn chat(
    State(state): State<AppState>,
    Extension(owner): Extension<Owner>,
    ApiJson(body): ApiJson<ChatBody>,
) -> Result<Response, ApiError> {
    let mode = parse_mode(body.mode.as_deref())?;
    check_text("query", &body.query, state.config.server.max_query_chars)?;
    // A new conversation is stored with its first run, in one transaction.
    let (conversation, new_conversation) = match body.conversation_id {
        Some(id) => (owned(&state, &owner, id).await?, false),
        None => {
            let title: String = body.query.trim().chars().take(80).collect();
            let new = CreateConversation {
                title: Some(title),
                model: body.model.clone(),
                ..CreateConversation::default()
            };
            (draft_for(&state, &owner, new)?, true)
        }
    };
    let request = StartRun {
        query: body.query,
        model: body.model,
        mode,
        max_iterations: None,
    };
    let live = launch_run(&state, &owner, &conversation, request, new_conversation).await?;
    Ok(stream_of(&state, &live))
}

#[utoipa::path(get, path = "/api/runs/{run_id}", tag = "runs", operation_id = "show_run",
    params(("run_id" = Uuid, Path, description = "Run id")),
    responses((status = 200, description = "The run's state and usage", body = Value),
              (status = 404, description = "Unknown or another tenant's")))]
pub async fn show(
    State(state): State<AppState>,
    Extension(owner): Extension<Owner>,
    ApiPath(run_id): ApiPath<Uuid>,
) -> Result<Json<RunRow>, ApiError> {
    state
        .store
        .get_run(&owner.0, run_id)
        .await?
        .map(Json)
        .ok_or(ApiError::NotFound)
}

#[utoipa::path(get, path = "/api/runs/{run_id}/events", tag = "runs",
    params(("run_id" = Uuid, Path, description = "Run id"), EventsParams,
           ("Last-Event-ID" = Option<u64>, Header, description = "Resume after this event id")),
    responses((status = 200, description = "Replay then follow; a finished run replays and closes", content_type = "text/event-stream"),
              (status = 404, description = "Unknown or another tenant's")))]
pub async fn events(
    State(state): State<AppState>,
    Extension(owner): Extension<Owner>,
    ApiPath(run_id): ApiPath<Uuid>,
    ApiQuery(params): ApiQuery<EventsParams>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let after = resume_point(&headers, params.after)?;
    let events = state.runs.events(&owner.0, run_id, after).await?;
    Ok(sse_response(events, state.keep_alive, &state.metrics))
}

#[utoipa::path(post, path = "/api/runs/{run_id}/cancel", tag = "runs",
    params(("run_id" = Uuid, Path, description = "Run id")),
    responses((status = 202, description = "Cancellation requested; the stream ends with `done {status:\"cancelled\"}`", body = Value),
              (status = 404, description = "Unknown or another tenant's"),
              (status = 409, description = "The run has already finished")))]
pub async fn cancel(
    State(state): State<AppState>,
    Extension(owner): Extension<Owner>,
    ApiPath(run_id): ApiPath<Uuid>,
) -> Result<impl IntoResponse, ApiError> {
    state.runs.cancel(&owner.0, run_id).await?;
    tracing::info!(%run_id, "run cancellation requested");
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({"run_id": run_id, "cancelling": true})),
    ))
}

#[utoipa::path(post, path = "/api/conversations/{id}/interrupt", tag = "runs",
    params(("id" = Uuid, Path, description = "Conversation id")),
    request_body = InterruptBody,
    responses((status = 202, description = "`{id, run_id}`", body = Value),
              (status = 400, description = "Empty or too long content"),
              (status = 404, description = "Unknown conversation"),
              (status = 409, description = "`no_active_run`")))]
pub async fn interrupt(
    State(state): State<AppState>,
    Extension(owner): Extension<Owner>,
    ApiPath(id): ApiPath<Uuid>,
    ApiJson(body): ApiJson<InterruptBody>,
) -> Result<impl IntoResponse, ApiError> {
    check_text(
        "content",
        &body.content,
        state.config.server.max_query_chars,
    )?;
    owned(&state, &owner, id).await?;
    let (interrupt_id, run_id) = state.runs.interrupt(id, body.content).await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({"id": interrupt_id, "run_id": run_id})),
    ))
}

#[utoipa::path(delete, path = "/api/conversations/{id}/interrupt/{interrupt_id}", tag = "runs",
    params(("id" = Uuid, Path, description = "Conversation id"),
           ("interrupt_id" = Uuid, Path, description = "Interrupt id")),
    responses((status = 200, description = "`{recalled: true}`", body = Value),
              (status = 404, description = "Unknown conversation"),
              (status = 409, description = "Already delivered to the agent")))]
pub async fn recall(
    State(state): State<AppState>,
    Extension(owner): Extension<Owner>,
    ApiPath((id, interrupt_id)): ApiPath<(Uuid, Uuid)>,
) -> Result<Json<Value>, ApiError> {
    owned(&state, &owner, id).await?;
    state.runs.recall(id, interrupt_id).await?;
    Ok(Json(json!({"recalled": true})))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_limits() {
        assert!(check_text("query", "hi", 5).is_ok());
        assert!(check_text("query", "  \n", 5).is_err());
        assert!(check_text("query", "ééééé", 5).is_ok());
        assert!(check_text("query", "éééééé", 5).is_err());
        assert!(check_text("query", "a\0b", 5).is_err());
    }

    #[test]
    fn max_iterations_accepts_whole_floats_only() {
        let parse = |v: Value| serde_json::from_value::<StartRunBody>(v).map(|b| b.max_iterations);
        assert_eq!(parse(json!({"query": "q"})).unwrap(), None);
        assert_eq!(
            parse(json!({"query": "q", "max_iterations": null})).unwrap(),
            None
        );
        assert_eq!(
            parse(json!({"query": "q", "max_iterations": 7})).unwrap(),
            Some(7)
        );
        assert_eq!(
            parse(json!({"query": "q", "max_iterations": 7.0})).unwrap(),
            Some(7)
        );
        for bad in [json!(7.5), json!(-1), json!(5e9), json!("7")] {
            assert!(
                parse(json!({"query": "q", "max_iterations": bad})).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn modes() {
        assert_eq!(parse_mode(None).unwrap(), None);
        assert_eq!(parse_mode(Some("auto")).unwrap(), None);
        assert_eq!(parse_mode(Some("json")).unwrap(), Some(Mode::Json));
        assert_eq!(parse_mode(Some("native")).unwrap(), Some(Mode::Native));
        assert!(parse_mode(Some("turbo")).is_err());
    }
}
