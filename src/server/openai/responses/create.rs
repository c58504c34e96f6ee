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
use crate::runs::session::{Answer, Answered, Ask, Thread};
use crate::runs::{title_after, LiveRun, RunError, Started};
use crate::server::openai::completions::{CONVERSATION_HEADER, RUN_HEADER};
use crate::server::openai::stream::CancelOnDrop;
use crate::server::openai::{caller_agent, OpenAiError};
use crate::server::state::AppState;
use crate::server::{ApiError, Owner};
use crate::store::NewConversation;

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
    let agent = caller_agent(&state, &owner, &parsed.echo.model).await?;
    // What the request asked for is stored with its run, before anything is sent.
    let record = serde_json::to_string(&parsed.echo)
        .map_err(|e| ApiError::Internal(format!("response request: {e}")))?;
    let started = if parsed.tool_outputs.is_empty() {
        start(&state, &owner.0, &agent, &mut parsed, record).await?
    } else {
        continue_with_outputs(&state, &owner.0, &parsed, record).await?
    };
    let live = started.live.clone();
    let echo = parsed.echo.clone();
    let ctx = context(live.id, live.conversation_id, started.started_at, echo);
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

/// Starts the request's run on its thread: a new conversation of the agent's, the stored
/// `conversation`, or after `previous_response_id` (its conversation while it is the latest
/// response there, else a fork at it; a `409` only while it still runs).
async fn start(
    state: &AppState,
    owner: &str,
    agent: &AgentSpec,
    parsed: &mut Parsed,
    record: String,
) -> Result<Started, OpenAiError> {
    let thread = thread_of(state, owner, agent, parsed).await?;
    let new = matches!(thread, Thread::New(_));
    let ask = Ask {
        query: parsed.query.clone(),
        // The images are taken from `parsed`, not copied (megabytes each).
        images: std::mem::take(&mut parsed.images),
        history: match new {
            true => std::mem::take(&mut parsed.history)
                .into_iter()
                .filter(|t| !t.content.trim().is_empty() || !t.images.is_empty())
                .collect(),
            false => Vec::new(),
        },
        client_tools: parsed.client_tools.clone(),
        agent: (!new).then(|| agent.name.clone()),
        record: Some(record),
        ..Ask::default()
    };
    Ok(state.runs.attach(owner, thread, ask).await?)
}

/// `function_call_output` items answer the caller tool calls of `previous_response_id`: the
/// continuation run (docs/api.md) is this response.
async fn continue_with_outputs(
    state: &AppState,
    owner: &str,
    parsed: &Parsed,
    record: String,
) -> Result<Started, OpenAiError> {
    let previous = parsed.previous.ok_or_else(|| {
        OpenAiError::invalid(
            Some("previous_response_id"),
            "function_call_output needs previous_response_id",
        )
    })?;
    let answer = Answer::Outputs(parsed.tool_outputs.clone());
    let answered = state
        .runs
        .answer(owner, &Thread::After(previous), answer, Some(record))
        .await
        .map_err(|e| match e {
            RunError::NotFound => OpenAiError::not_found(
                Some("previous_response_id"),
                "The previous response was not found.",
            ),
            RunError::Invalid(m) | RunError::Conflict(m) => OpenAiError::invalid(Some("input"), m),
            other => other.into(),
        })?;
    match answered {
        Answered::Continued(started) => Ok(started),
        Answered::Resumed { .. } => {
            Err(ApiError::Internal("tool outputs resumed no continuation".into()).into())
        }
    }
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

/// The thread the request's run goes on: after `previous_response_id` (a response of the
/// caller's), in `conversation`, else a new conversation of the agent's.
async fn thread_of(
    state: &AppState,
    owner: &str,
    agent: &AgentSpec,
    parsed: &Parsed,
) -> Result<Thread, OpenAiError> {
    let thread = match (parsed.previous, parsed.conversation) {
        (Some(previous), _) => {
            let found = state.runs.run_with_record(owner, previous).await;
            match found {
                Ok((_, Some(_))) => Thread::After(previous),
                Ok((_, None)) | Err(RunError::NotFound) => return Err(previous_not_found(parsed)),
                Err(e) => return Err(e.into()),
            }
        }
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
            Thread::Conversation(conversation)
        }
        (None, None) => return Ok(Thread::New(new_conversation(agent, parsed))),
    };
    if !parsed.history.is_empty() {
        return Err(OpenAiError::invalid(
            Some("input"),
            "With 'previous_response_id' or 'conversation', the input is the new user \
             message only: the earlier turns are the stored conversation's",
        ));
    }
    Ok(thread)
}

/// A new conversation of `agent`'s for the request.
fn new_conversation(agent: &AgentSpec, parsed: &Parsed) -> NewConversation {
    let prompt: Vec<&str> = agent
        .system_prompt
        .iter()
        .chain(parsed.system.iter())
        .map(String::as_str)
        .filter(|p| !p.trim().is_empty())
        .collect();
    NewConversation {
        title: Some(title_after(&parsed.query)),
        agent: Some(agent.name.clone()),
        // The agent's own prompt when the request adds nothing (it is read at run time).
        system_prompt: (!parsed.system.is_empty()).then(|| prompt.join("\n\n")),
        ..NewConversation::default()
    }
}

fn previous_not_found(parsed: &Parsed) -> OpenAiError {
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
}
