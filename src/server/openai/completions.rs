//! `POST /v1/chat/completions`: the request becomes one run — in a new conversation
//! of the agent's, seeded with the request's earlier messages, or in the stored conversation
//! named by `X-Reagent-Conversation-Id` — and the run's events become a `chat.completion` (here)
//! or a chunk stream (`stream`). Either way a client that goes away cancels its run.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use futures::StreamExt;
use serde_json::{json, Value};
use uuid::Uuid;

use super::caller_agent;
use super::error::OpenAiError;
use super::reply::{finish_reason, parse_wire_call_id, tool_calls_json, usage_json, Meta};
use super::stream::{chunk_stream, CancelOnDrop};
use super::unix_now;
use super::wire::{parse, Parsed};
use crate::agent::caller_tools::ToolOutput;
use crate::agent::RunOutcome;
use crate::config::AgentSpec;
use crate::domain::EventName;
use crate::runs::session::{Answer, Answered, Ask, Thread};
use crate::runs::{title_after, LiveRun};
use crate::server::state::AppState;
use crate::server::{ApiError, Owner};
use crate::store::NewConversation;

/// The request header naming the conversation to continue.
pub const CONVERSATION_HEADER: &str = "x-reagent-conversation-id";
/// The response header carrying the run's id.
pub const RUN_HEADER: &str = "x-reagent-run-id";

pub async fn create(
    State(state): State<AppState>,
    Extension(owner): Extension<Owner>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, OpenAiError> {
    let body = body.map_err(|e| match e.status() {
        StatusCode::PAYLOAD_TOO_LARGE => OpenAiError::from(ApiError::PayloadTooLarge),
        _ => OpenAiError::invalid(None, e.body_text()),
    })?;
    let mut parsed = parse(&body)?;
    // The request's images now live in `parsed` (taken by the run): not twice for its length.
    drop(body);
    let agent = caller_agent(&state, &owner, &parsed.model).await?;
    let live = match parsed.outputs.clone() {
        Some(outputs) => continue_run(&state, &owner, &headers, outputs).await?,
        None => {
            let (thread, ask) = start_request(&headers, &agent, &mut parsed)?;
            state.runs.attach(&owner.0, thread, ask).await?.live
        }
    };
    let ids = [
        (HeaderName::from_static(RUN_HEADER), header_value(live.id)),
        (
            HeaderName::from_static(CONVERSATION_HEADER),
            header_value(live.conversation_id),
        ),
    ];
    let meta = Meta {
        id: format!("chatcmpl-{}", live.id.simple()),
        model: agent.name.clone(),
        created: unix_now(),
        run_id: live.id,
    };
    if parsed.stream {
        let body = chunk_stream(&state, live, meta, parsed.include_usage);
        return Ok((ids, body).into_response());
    }
    let outcome = wait_for_outcome(&state, live).await?;
    Ok((ids, Json(completion(&meta, &outcome))).into_response())
}

fn header_value(id: Uuid) -> HeaderValue {
    // A UUID's text is always a valid header value.
    HeaderValue::from_str(&id.to_string()).unwrap_or_else(|_| HeaderValue::from_static(""))
}

/// Answers the paused run with the request's `tool` results: the run named by their call
/// ids ([`parse_wire_call_id`]), else the latest run of the conversation the header names.
async fn continue_run(
    state: &AppState,
    owner: &Owner,
    headers: &HeaderMap,
    mut outputs: Vec<ToolOutput>,
) -> Result<Arc<LiveRun>, OpenAiError> {
    let mut named = None;
    for o in &mut outputs {
        if let Some((run, call)) = parse_wire_call_id(&o.call_id) {
            named = Some(run);
            o.call_id = call;
        }
    }
    let thread = match (named, conversation_header(headers)?) {
        (Some(run), _) => Thread::After(run),
        (None, Some(conversation)) => Thread::Conversation(conversation),
        (None, None) => {
            return Err(OpenAiError::invalid(
                Some("messages"),
                "The 'tool' results name no run of reagent's: send the tool_call ids it \
                 returned, or the X-Reagent-Conversation-Id header",
            ))
        }
    };
    let answer = Answer::Outputs(outputs);
    match state.runs.answer(&owner.0, &thread, answer, None).await? {
        Answered::Continued(started) => Ok(started.live),
        Answered::Resumed { .. } => {
            Err(ApiError::Internal("tool outputs resumed no continuation".into()).into())
        }
    }
}

/// The conversation the header names (`None` without the header).
fn conversation_header(headers: &HeaderMap) -> Result<Option<Uuid>, OpenAiError> {
    let Some(value) = headers.get(CONVERSATION_HEADER) else {
        return Ok(None);
    };
    value
        .to_str()
        .ok()
        .and_then(|v| Uuid::parse_str(v.trim()).ok())
        .map(Some)
        .ok_or_else(OpenAiError::conversation_not_found)
}

/// The run to start: in the named conversation (its stored history, only the query read) or
/// in a new one of the agent's, seeded with the request's history. The images are taken from
/// `parsed`, not copied (megabytes each).
fn start_request(
    headers: &HeaderMap,
    agent: &AgentSpec,
    parsed: &mut Parsed,
) -> Result<(Thread, Ask), OpenAiError> {
    let ask = Ask {
        query: parsed.query.clone(),
        client_tools: parsed.tools.clone(),
        images: std::mem::take(&mut parsed.images),
        ..Ask::default()
    };
    if let Some(id) = conversation_header(headers)? {
        // The response names `agent`: the conversation must be one of its.
        let ask = Ask {
            agent: Some(agent.name.clone()),
            ..ask
        };
        return Ok((Thread::Conversation(id), ask));
    }
    let prompt: Vec<&str> = agent
        .system_prompt
        .iter()
        .map(String::as_str)
        .chain(parsed.system.iter().map(String::as_str))
        .filter(|p| !p.trim().is_empty())
        .collect();
    let conversation = NewConversation {
        title: Some(title_after(&parsed.query)),
        agent: Some(agent.name.clone()),
        // The agent's own prompt when the request adds nothing (it is read at run time).
        system_prompt: (!parsed.system.is_empty()).then(|| prompt.join("\n\n")),
        ..NewConversation::default()
    };
    let ask = Ask {
        history: std::mem::take(&mut parsed.history)
            .into_iter()
            .filter(|t| !t.content.trim().is_empty() || !t.images.is_empty())
            .collect(),
        ..ask
    };
    Ok((Thread::New(conversation), ask))
}

/// Follows the run to its `done` event. If the client goes away first, the dropped future
/// cancels the run.
async fn wait_for_outcome(state: &AppState, live: Arc<LiveRun>) -> Result<RunOutcome, OpenAiError> {
    let mut guard = CancelOnDrop::new(live.clone());
    let mut events = state.runs.live_events(&live, 0);
    while let Some(ev) = events.next().await {
        if ev.name == EventName::Done.as_str() {
            guard.disarm();
            return serde_json::from_str(&ev.data)
                .map_err(|e| ApiError::Internal(format!("unreadable done event: {e}")).into());
        }
    }
    guard.disarm();
    Err(ApiError::Internal("the run's events ended without done".into()).into())
}

fn completion(meta: &Meta, outcome: &RunOutcome) -> Value {
    let message = match &outcome.required_action {
        Some(action) => json!({
            "role": "assistant",
            "content": null,
            "refusal": null,
            "tool_calls": tool_calls_json(meta.run_id, &action.tool_calls, false),
        }),
        None => json!({"role": "assistant", "content": outcome.answer, "refusal": null}),
    };
    json!({
        "id": meta.id,
        "object": "chat.completion",
        "created": meta.created,
        "model": meta.model,
        "choices": [{
            "index": 0,
            "message": message,
            "finish_reason": finish_reason(outcome.status),
            "logprobs": null,
        }],
        "usage": usage_json(&outcome.usage),
        "system_fingerprint": null,
    })
}
