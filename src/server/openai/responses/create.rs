//! `POST /v1/responses`: the request becomes one run — in a new conversation of the agent's,
//! in the conversation of `previous_response_id` when that is its latest response, in a fork
//! of it at that response otherwise, or in `conversation` — stored with what the request asked
//! for before anything is sent. Then the run's events go through the encoder: as the final
//! object, as a stream, or (background) not at all yet.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use futures::StreamExt;
use serde_json::Value;
use uuid::Uuid;

use super::body::sse;
use super::encode::Encoder;
use super::load::context;
use super::request::{parse, Parsed};
use crate::config::AgentSpec;
use crate::domain::RunStatus;
use crate::runs::{title_after, ConversationRef, LiveRun, RunError, StartRun};
use crate::server::openai::completions::{CONVERSATION_HEADER, RUN_HEADER};
use crate::server::openai::stream::CancelOnDrop;
use crate::server::openai::OpenAiError;
use crate::server::state::AppState;
use crate::server::{ApiError, Owner};
use crate::store::{NewConversation, StoreError};

pub async fn create(
    State(state): State<AppState>,
    Extension(owner): Extension<Owner>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, OpenAiError> {
    let body = body.map_err(|e| match e.status() {
        StatusCode::PAYLOAD_TOO_LARGE => OpenAiError::from(ApiError::PayloadTooLarge),
        _ => OpenAiError::invalid(None, e.body_text()),
    })?;
    let mut parsed = parse(&body)?;
    // The request's images now live in `parsed` (taken by the run): not twice for its length.
    drop(body);
    let agent = state
        .runs
        .agent(&parsed.echo.model)
        .ok_or_else(|| OpenAiError::model_not_found(&parsed.echo.model))?
        .clone();
    let live = if parsed.tool_outputs.is_empty() {
        start(&state, &owner.0, &agent, &mut parsed).await?
    } else {
        continue_with_outputs(&state, &owner.0, &parsed).await?
    };
    // The run and what the request asked for are stored before anything is sent.
    let row = state.runs.run(&owner.0, live.id).await?;
    let echo = parsed.echo.clone();
    let stored = serde_json::to_string(&echo)
        .map_err(|e| ApiError::Internal(format!("response request: {e}")))?;
    if let Err(e) = state.store.put_response_request(live.id, &stored).await {
        live.cancel.cancel();
        return Err(ApiError::from(e).into());
    }
    let ctx = context(&row, echo);
    let ids = [
        (HeaderName::from_static(RUN_HEADER), header_value(live.id)),
        (
            HeaderName::from_static(CONVERSATION_HEADER),
            header_value(live.conversation_id),
        ),
    ];
    let background = parsed.echo.background;
    let encoder = Encoder::new(ctx);
    if parsed.stream {
        let guard = (!background).then(|| CancelOnDrop::new(live.clone()));
        let events = state.runs.live_events(&live, 0);
        let body = sse(
            events,
            encoder,
            None,
            guard,
            state.keep_alive,
            state.metrics.sse_subscriber(),
        );
        return Ok((ids, body).into_response());
    }
    if background {
        return Ok((ids, Json(encoder.response())).into_response());
    }
    let response = follow_to_end(&state, live, encoder).await?;
    Ok((ids, Json(response)).into_response())
}

/// Starts the request's run (in a fork made for it, deleted again if the start fails).
///
/// Concurrent requests after one finished response are deterministic: the first to start
/// continues its conversation; one that finds the conversation taken by another run meanwhile
/// (busy, or moved on past that response) continues in a fork at that response, as it would
/// have a moment later — never a `409` for a finished response.
async fn start(
    state: &AppState,
    owner: &str,
    agent: &AgentSpec,
    parsed: &mut Parsed,
) -> Result<Arc<LiveRun>, OpenAiError> {
    let (request, fork) = start_request(state, owner, agent, parsed).await?;
    let joined = request.after_run;
    let first = start_in(state, owner, parsed, request, fork).await;
    if first.is_ok() {
        // Kept for a fork only while joining could fail (megabytes each).
        parsed.images = Vec::new();
    }
    let busy = match first {
        // Taken meanwhile: another run started there, or (its start's transaction says) began
        // and ended since the previous response was found to be the latest.
        Err(e @ (RunError::Active | RunError::Store(StoreError::Conflict(_)))) => e,
        other => return other.map_err(OpenAiError::from),
    };
    let Some(previous) = joined else {
        return Err(busy.into());
    };
    // The previous response itself still running keeps its conversation busy: a 409.
    let row = state.runs.run(owner, previous).await?;
    if row.status == RunStatus::Running {
        return Err(RunError::Active.into());
    }
    let fork = state
        .runs
        .fork_conversation(owner, row.conversation_id, Some(previous))
        .await?;
    let request = existing_request(agent, parsed, fork.id, None);
    Ok(start_in(state, owner, parsed, request, Some(fork.id)).await?)
}

/// Starts `request` with the request's caller tools; `fork`, made for it, is deleted again if
/// the start fails.
async fn start_in(
    state: &AppState,
    owner: &str,
    parsed: &Parsed,
    mut request: StartRun,
    fork: Option<Uuid>,
) -> Result<Arc<LiveRun>, RunError> {
    request.client_tools = parsed.client_tools.clone();
    let started = state.runs.start(owner, request).await;
    if let (Err(_), Some(fork)) = (&started, fork) {
        let _ = state.runs.delete_conversation(owner, fork).await;
    }
    started
}

/// `function_call_output` items answer the caller tool calls of `previous_response_id`: the
/// continuation run (docs/api.md) is this response.
async fn continue_with_outputs(
    state: &AppState,
    owner: &str,
    parsed: &Parsed,
) -> Result<Arc<LiveRun>, OpenAiError> {
    let previous = parsed.previous.ok_or_else(|| {
        OpenAiError::invalid(
            Some("previous_response_id"),
            "function_call_output needs previous_response_id",
        )
    })?;
    let outputs = parsed.tool_outputs.clone();
    state
        .runs
        .submit_tool_outputs(owner, previous, outputs)
        .await
        .map_err(|e| match e {
            RunError::NotFound => OpenAiError::not_found(
                Some("previous_response_id"),
                "The previous response was not found.",
            ),
            RunError::Invalid(m) | RunError::Conflict(m) => OpenAiError::invalid(Some("input"), m),
            other => other.into(),
        })
}

fn header_value(id: Uuid) -> HeaderValue {
    // A UUID's text is always a valid header value.
    HeaderValue::from_str(&id.to_string()).unwrap_or_else(|_| HeaderValue::from_static(""))
}

/// Reads the run's events to its `done`; a client that goes away first cancels the run.
async fn follow_to_end(
    state: &AppState,
    live: Arc<LiveRun>,
    mut encoder: Encoder,
) -> Result<Value, OpenAiError> {
    let mut guard = CancelOnDrop::new(live.clone());
    let mut events = state.runs.live_events(&live, 0);
    while let Some(ev) = events.next().await {
        encoder.event(&ev);
        if encoder.finished() {
            guard.disarm();
            return Ok(encoder.response());
        }
    }
    guard.disarm();
    Err(ApiError::Internal("the run's events ended without done".into()).into())
}

/// The run to start, and the conversation forked for it (if any). The images are taken from
/// `parsed`, not copied (megabytes each).
async fn start_request(
    state: &AppState,
    owner: &str,
    agent: &AgentSpec,
    parsed: &mut Parsed,
) -> Result<(StartRun, Option<Uuid>), OpenAiError> {
    let existing = match (parsed.previous, parsed.conversation) {
        (Some(previous), _) => Some(continue_at(state, owner, previous, parsed).await?),
        (None, Some(conversation)) => {
            state
                .runs
                .owned(owner, conversation)
                .await
                .map_err(|e| match e {
                    RunError::NotFound => OpenAiError::not_found(
                        Some("conversation"),
                        format!("Conversation '{conversation}' not found."),
                    ),
                    other => other.into(),
                })?;
            Some((conversation, None))
        }
        (None, None) => None,
    };
    if let Some((conversation, fork)) = existing {
        if !parsed.history.is_empty() {
            return Err(OpenAiError::invalid(
                Some("input"),
                "With 'previous_response_id' or 'conversation', the input is the new user \
                 message only: the earlier turns are the stored conversation's",
            ));
        }
        // Joining the conversation of `previous_response_id`: only while it is the latest.
        let after = parsed.previous.filter(|_| fork.is_none());
        return Ok((existing_request(agent, parsed, conversation, after), fork));
    }
    let prompt: Vec<&str> = agent
        .system_prompt
        .iter()
        .chain(parsed.system.iter())
        .map(String::as_str)
        .filter(|p| !p.trim().is_empty())
        .collect();
    let conversation = NewConversation {
        title: Some(title_after(&parsed.query)),
        agent: Some(agent.name.clone()),
        // The agent's own prompt when the request adds nothing (it is read at run time).
        system_prompt: (!parsed.system.is_empty()).then(|| prompt.join("\n\n")),
        ..NewConversation::default()
    };
    let request = StartRun {
        history: std::mem::take(&mut parsed.history)
            .into_iter()
            .filter(|t| !t.content.trim().is_empty() || !t.images.is_empty())
            .collect(),
        images: std::mem::take(&mut parsed.images),
        ..StartRun::new(ConversationRef::New(conversation), parsed.query.clone())
    };
    Ok((request, None))
}

/// The request's run in the existing `conversation` (the agent's, checked at the start), after
/// the run `after_run` when it must still be the latest. The images are taken from `parsed`,
/// except when joining after a run: a fork may need them again if that fails.
fn existing_request(
    agent: &AgentSpec,
    parsed: &mut Parsed,
    conversation: Uuid,
    after_run: Option<Uuid>,
) -> StartRun {
    let images = match after_run {
        Some(_) => parsed.images.clone(),
        None => std::mem::take(&mut parsed.images),
    };
    StartRun {
        agent: Some(agent.name.clone()),
        images,
        after_run,
        ..StartRun::new(
            ConversationRef::Existing(conversation),
            parsed.query.clone(),
        )
    }
}

/// Where a response after `previous` runs: its conversation when `previous` is the latest
/// run there, else a fork of it at `previous` (the second value names the fork).
async fn continue_at(
    state: &AppState,
    owner: &str,
    previous: Uuid,
    parsed: &Parsed,
) -> Result<(Uuid, Option<Uuid>), OpenAiError> {
    let not_found = || {
        OpenAiError::not_found(
            Some("previous_response_id"),
            format!(
                "Previous response with id '{}' not found.",
                parsed
                    .echo
                    .previous_response_id
                    .as_deref()
                    .unwrap_or_default()
            ),
        )
    };
    let row = match state.runs.run(owner, previous).await {
        Ok(row) => row,
        Err(RunError::NotFound) => return Err(not_found()),
        Err(e) => return Err(e.into()),
    };
    if state
        .store
        .response_request(previous)
        .await
        .map_err(ApiError::from)?
        .is_none()
    {
        return Err(not_found());
    }
    let latest = state
        .store
        .latest_run(row.conversation_id)
        .await
        .map_err(ApiError::from)?;
    if latest.map(|r| r.id) == Some(previous) {
        return Ok((row.conversation_id, None));
    }
    let fork = state
        .runs
        .fork_conversation(owner, row.conversation_id, Some(previous))
        .await?;
    Ok((fork.id, Some(fork.id)))
}
