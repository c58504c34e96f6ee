//! Runs and interrupts (docs/api.md): start (202 or SSE by `Accept`), the one-request
//! `POST /api/chat`, status, event replay/follow, cancel, and the interrupt queue. Handlers
//! parse the request, make one call to the [`crate::runs::RunManager`] (which checks it, and
//! owns the run, so a vanished SSE client never stops it) and map the result.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use super::auth::Owner;
use super::caller_tools::{definitions, CallerTool, ToolOutputsBody};
use super::error::{ApiError, ApiJson, ApiPath, ApiQuery};
use super::images::{urls, ImageInput};
use super::sse::{resume_point, sse_response, wants_event_stream};
use super::state::AppState;
use super::views::{Cancelling, ErrorBody, InterruptAccepted, Recalled, Run, RunStarted};
use crate::agent::Mode;
use crate::config::IMPLICIT_AGENT;
use crate::domain::Engine;
use crate::runs::{ConversationRef, LiveRun, StartRun};

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
    /// `react`, `dag` or `auto`; the conversation's, else the default, when absent.
    #[schema(value_type = Option<String>)]
    pub engine: Option<Engine>,
    /// Tools the caller executes (docs/api.md "Caller tools"); a call of one ends the run
    /// `requires_action`.
    #[serde(default)]
    pub client_tools: Vec<CallerTool>,
    /// Images of the query (docs/api.md "Images"); at most 8.
    #[serde(default)]
    #[schema(max_items = 8)]
    pub images: Vec<ImageInput>,
}

/// A JSON integer, also written as a float with no fraction (`5.0`): JSON Schema counts both as
/// integers, and clients (JavaScript among them) may send either (a float below 2^64 is whole
/// when it has no fraction, and then fits a `u64`).
pub(crate) fn whole_number<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: TryFrom<u64>,
{
    let Some(n) = Option::<serde_json::Number>::deserialize(d)? else {
        return Ok(None);
    };
    let whole = match (n.as_u64(), n.as_f64()) {
        (Some(u), _) => Some(u),
        (None, Some(f)) if f.fract() == 0.0 && (0.0..18_446_744_073_709_551_616.0).contains(&f) => {
            Some(f as u64)
        }
        _ => None,
    };
    whole
        .and_then(|u| T::try_from(u).ok())
        .map(Some)
        .ok_or_else(|| serde::de::Error::custom(format!("{n} is not a whole number in range")))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ChatBody {
    pub query: String,
    pub conversation_id: Option<Uuid>,
    pub model: Option<String>,
    pub mode: Option<String>,
    /// `react`, `dag` or `auto`; also the engine of the conversation it creates.
    #[schema(value_type = Option<String>)]
    pub engine: Option<Engine>,
    /// An agent (`GET /api/agents`) for the conversation this request creates: its
    /// model, system prompt, tools and iteration cap apply. Not with `conversation_id` (a
    /// conversation keeps the agent it was created with).
    pub agent: Option<String>,
    /// A version of the API agent `agent` for the conversation this request creates; its
    /// latest when absent. Not with `conversation_id` (a conversation keeps its version).
    #[schema(minimum = 1)]
    pub agent_version: Option<u32>,
    /// Tools the caller executes (docs/api.md "Caller tools").
    #[serde(default)]
    pub client_tools: Vec<CallerTool>,
    /// Images of the query (docs/api.md "Images"); at most 8.
    #[serde(default)]
    #[schema(max_items = 8)]
    pub images: Vec<ImageInput>,
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
    summary = "Start a run in a conversation",
    request_body = StartRunBody,
    responses((status = 202, description = "Started; follow `events_url`", body = RunStarted),
              (status = 200, description = "With `Accept: text/event-stream`: the run's SSE stream from its first event (docs/api.md)", content_type = "text/event-stream"),
              (status = 400, description = "`invalid_request`: empty or too long query, unknown mode or model, bad `client_tools` or `images`; `model_without_vision`: images for a model without vision", body = ErrorBody),
              (status = 409, description = "`run_active`: the conversation already has an active run; `conflict`: `client_tools` with `engine: dag`, or a name declared twice in them", body = ErrorBody)))]
pub async fn start(
    State(state): State<AppState>,
    Extension(owner): Extension<Owner>,
    ApiPath(id): ApiPath<Uuid>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<StartRunBody>,
) -> Result<Response, ApiError> {
    let request = StartRun {
        model: body.model,
        mode: parse_mode(body.mode.as_deref())?,
        max_iterations: body.max_iterations,
        engine: body.engine,
        client_tools: definitions(body.client_tools)?,
        images: urls(body.images),
        ..StartRun::new(ConversationRef::Existing(id), body.query)
    };
    let live = state.runs.start(&owner.0, request).await?;
    Ok(started(&state, &headers, &live))
}

/// A started run: its stream with `Accept: text/event-stream`, else 202 with where to follow it.
fn started(state: &AppState, headers: &HeaderMap, live: &LiveRun) -> Response {
    if wants_event_stream(headers) {
        return stream_of(state, live);
    }
    let body = RunStarted {
        run_id: live.id,
        conversation_id: live.conversation_id,
        events_url: format!("/api/runs/{}/events", live.id),
    };
    (StatusCode::ACCEPTED, Json(body)).into_response()
}

#[utoipa::path(post, path = "/api/runs/{run_id}/tool_outputs", tag = "runs",
    params(("run_id" = Uuid, Path, description = "The run that ended `requires_action`")),
    summary = "Answer a run's caller tool calls and continue it",
    request_body = ToolOutputsBody,
    responses((status = 202, description = "The continuation started (its `start` carries `continues`); follow `events_url`", body = RunStarted),
              (status = 200, description = "With `Accept: text/event-stream`: the continuation's SSE stream from its first event (docs/api.md)", content_type = "text/event-stream"),
              (status = 400, description = "`invalid_request`: a pending call without output, or an output for no pending call (the message names it)", body = ErrorBody),
              (status = 404, description = "`not_found`: unknown or another tenant's run", body = ErrorBody),
              (status = 409, description = "`conflict`: the run is not `requires_action`, or a later run of its conversation answered it; `run_active`: the conversation has a running run", body = ErrorBody)))]
pub async fn tool_outputs(
    State(state): State<AppState>,
    Extension(owner): Extension<Owner>,
    ApiPath(run_id): ApiPath<Uuid>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<ToolOutputsBody>,
) -> Result<Response, ApiError> {
    let live = state
        .runs
        .submit_tool_outputs(&owner.0, run_id, body.into_outputs())
        .await?;
    Ok(started(&state, &headers, &live))
}

#[utoipa::path(post, path = "/api/chat", tag = "runs", request_body = ChatBody,
    summary = "Start a run and stream it, in a new conversation unless one is given",
    responses((status = 200, description = "The run's SSE stream (docs/api.md; the conversation id is in `start`)", content_type = "text/event-stream"),
              (status = 400, description = "`invalid_request`: empty or too long query, unknown mode or model, bad `client_tools` or `images`; `model_without_vision`: images for a model without vision", body = ErrorBody),
              (status = 404, description = "`not_found`: unknown or another tenant's conversation, or an `agent` the caller has not (unknown, deleted or another tenant's)", body = ErrorBody),
              (status = 409, description = "`run_active`: the conversation already has an active run; `conflict`: `agent` is not the conversation's agent, `client_tools` with `engine: dag`, or a name declared twice in them", body = ErrorBody)))]
pub async fn chat(
    State(state): State<AppState>,
    Extension(owner): Extension<Owner>,
    ApiJson(body): ApiJson<ChatBody>,
) -> Result<Response, ApiError> {
    // A new conversation is stored with its first run, in one transaction.
    if body.conversation_id.is_some() && body.agent_version.is_some() {
        return Err(ApiError::invalid(
            "agent_version: a conversation keeps the agent version it was created with",
        ));
    }
    let conversation = match (body.conversation_id, body.agent) {
        (Some(id), Some(agent)) => {
            same_agent(&state, &owner, id, &agent).await?;
            ConversationRef::Existing(id)
        }
        (Some(id), None) => ConversationRef::Existing(id),
        (None, agent) => match ConversationRef::titled_after(&body.query, body.model.clone()) {
            ConversationRef::New(mut new) => {
                new.engine = body.engine;
                new.agent = agent;
                new.agent_version = body.agent_version;
                ConversationRef::New(new)
            }
            existing => existing,
        },
    };
    let request = StartRun {
        mode: parse_mode(body.mode.as_deref())?,
        model: body.model,
        engine: body.engine,
        client_tools: definitions(body.client_tools)?,
        images: urls(body.images),
        ..StartRun::new(conversation, body.query)
    };
    let live = state.runs.start(&owner.0, request).await?;
    Ok(stream_of(&state, &live))
}

/// A conversation keeps its agent: naming another one for it is a conflict, never ignored.
async fn same_agent(
    state: &AppState,
    owner: &Owner,
    id: uuid::Uuid,
    agent: &str,
) -> Result<(), ApiError> {
    let conversation = state.runs.owned(&owner.0, id).await?;
    let own = conversation.agent.as_deref().unwrap_or(IMPLICIT_AGENT);
    if own == agent {
        return Ok(());
    }
    Err(ApiError::Conflict(format!(
        "the conversation belongs to agent '{own}', not '{agent}'; omit agent to continue it, or \
         start a new conversation for '{agent}'"
    )))
}

#[utoipa::path(get, path = "/api/runs/{run_id}", tag = "runs", operation_id = "show_run",
    params(("run_id" = Uuid, Path, description = "Run id")),
    summary = "A run's state and usage",
    responses((status = 200, description = "The run; a live run's counters are current", body = Run)))]
pub async fn show(
    State(state): State<AppState>,
    Extension(owner): Extension<Owner>,
    ApiPath(run_id): ApiPath<Uuid>,
) -> Result<Json<Run>, ApiError> {
    Ok(Json(state.runs.run(&owner.0, run_id).await?.into()))
}

#[utoipa::path(get, path = "/api/runs/{run_id}/events", tag = "runs",
    params(("run_id" = Uuid, Path, description = "Run id"), EventsParams,
           ("Last-Event-ID" = Option<u64>, Header, description = "Resume after this event id")),
    summary = "A run's events: replay, then follow",
    responses((status = 200, description = "SSE (docs/api.md): replay after the resume point, then follow; a finished run replays and closes", content_type = "text/event-stream")))]
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
    summary = "Cancel a run",
    responses((status = 202, description = "Cancellation requested; the stream ends with `done {status:\"cancelled\"}`", body = Cancelling),
              (status = 409, description = "`conflict`: the run has already finished", body = ErrorBody)))]
pub async fn cancel(
    State(state): State<AppState>,
    Extension(owner): Extension<Owner>,
    ApiPath(run_id): ApiPath<Uuid>,
) -> Result<impl IntoResponse, ApiError> {
    state.runs.cancel(&owner.0, run_id).await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(Cancelling {
            run_id,
            cancelling: true,
        }),
    ))
}

#[utoipa::path(post, path = "/api/conversations/{id}/interrupt", tag = "runs",
    params(("id" = Uuid, Path, description = "Conversation id")),
    summary = "Send a follow-up to the conversation's active run",
    request_body = InterruptBody,
    responses((status = 202, description = "Accepted; with `next_run: true` when the loop has closed (the answer streams): it becomes the query of the next run", body = InterruptAccepted),
              (status = 400, description = "`invalid_request`: empty or too long content", body = ErrorBody),
              (status = 409, description = "`no_active_run`: nothing is running; start a run instead", body = ErrorBody)))]
pub async fn interrupt(
    State(state): State<AppState>,
    Extension(owner): Extension<Owner>,
    ApiPath(id): ApiPath<Uuid>,
    ApiJson(body): ApiJson<InterruptBody>,
) -> Result<impl IntoResponse, ApiError> {
    let accepted = state.runs.interrupt(&owner.0, id, body.content).await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(InterruptAccepted::from(accepted)),
    ))
}

#[utoipa::path(delete, path = "/api/conversations/{id}/interrupt/{interrupt_id}", tag = "runs",
    params(("id" = Uuid, Path, description = "Conversation id"),
           ("interrupt_id" = Uuid, Path, description = "Interrupt id")),
    summary = "Take back a follow-up the agent has not seen yet",
    responses((status = 200, description = "Recalled: the agent will not see it", body = Recalled),
              (status = 409, description = "`conflict`: already delivered to the agent", body = ErrorBody),
              (status = 503, description = "`unavailable`: the instance running the run did not answer within 5 s (several instances); the recall was withdrawn", body = ErrorBody)))]
pub async fn recall(
    State(state): State<AppState>,
    Extension(owner): Extension<Owner>,
    ApiPath((id, interrupt_id)): ApiPath<(Uuid, Uuid)>,
) -> Result<Json<Recalled>, ApiError> {
    state.runs.recall(&owner.0, id, interrupt_id).await?;
    Ok(Json(Recalled { recalled: true }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

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
