//! `/a2a/{agent}` (docs/protocols.md): every agent visible to a tenant as an A2A agent — its
//! card, and JSON-RPC with A2A 1.0's method names and 0.3's, each client answered in the
//! version it speaks. A codec over runs: a task is a run (task id = run id), a context a
//! conversation, the answer the task's text artifact; sends, cancels and subscriptions go
//! through the session layer and streams through the one event body. The card advertises the
//! bearer scheme exactly when API keys are configured, and the key layer enforces it.
//! Files: `rpc` (envelope, methods, errors), `wire` (1.0 and 0.3 shapes), `card`, `message`
//! (a client's message read), `send` (starting or answering a task), `stream` (events as
//! stream results), `task` (get, cancel, subscribe).
//!
//! Not in the OpenAPI document, like `/mcp`: the document's checkers (schemathesis, the route
//! tables of tests/api/security) read every operation as a REST resource — a JSON-RPC endpoint
//! answers a bad body with 200 and an error object, and `/a2a/../.well-known/agent-card.json`
//! is, once the URL is normalised, the default agent's card. A2A's own schema and its TCK are
//! this endpoint's contract (tests/peers/README.md).

mod card;
mod message;
mod rpc;
mod send;
mod stream;
mod task;
#[cfg(test)]
mod tests;
mod wire;

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::middleware::from_fn_with_state;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Router};
use futures::stream::{BoxStream, StreamExt};
use serde_json::Value;

use super::auth;
use super::event_body::{event_stream, Encoder};
use super::state::AppState;
use super::{ApiError, Owner};
use crate::runs::LoggedEvent;
use message::Incoming;
use rpc::{Op, RpcError, Wire};
use stream::TaskStream;
use wire::State as TaskState;

/// The header a client names its A2A version in.
const VERSION_HEADER: &str = "a2a-version";

/// The cards (public) and the JSON-RPC endpoint (behind the key layer, whose 401 names the
/// bearer scheme the card advertises: `WWW-Authenticate: Bearer`).
pub fn routes(state: &AppState) -> Router<AppState> {
    // A message may carry images as bytes: the image routes' body limit.
    let with_images = super::images::body_limit(&state.config.server);
    let rpc = Router::new()
        .route("/a2a/{agent}", post(handle).layer(with_images))
        .method_not_allowed_fallback(super::error::method_not_allowed)
        .route_layer(from_fn_with_state(state.auth.clone(), auth::require_key));
    Router::new()
        .route("/a2a/{agent}/.well-known/agent-card.json", get(card::agent))
        .route("/.well-known/agent-card.json", get(card::default))
        .merge(rpc)
}

/// A version the client names that this server does not speak: 0.3 and 1.x are spoken.
fn version_error(headers: &HeaderMap) -> Option<RpcError> {
    let asked = headers.get(VERSION_HEADER)?.to_str().unwrap_or("?").trim();
    let spoken =
        asked == "0.3" || asked.starts_with("0.3.") || asked == "1" || asked.starts_with("1.");
    (!spoken && !asked.is_empty()).then(|| {
        RpcError::new(
            rpc::VERSION_NOT_SUPPORTED,
            format!("A2A version {asked:?} is not supported: this agent speaks 1.0 and 0.3"),
        )
    })
}

async fn handle(
    State(state): State<AppState>,
    Extension(owner): Extension<Owner>,
    Path(agent): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    // An agent the caller cannot see is no endpoint at all, whatever the body.
    match state.runs.catalog().get(&owner.0, &agent, None).await {
        Ok(Some(_)) => {}
        Ok(None) => return ApiError::NotFound.into_response(),
        Err(e) => return ApiError::from(crate::runs::RunError::from(e)).into_response(),
    }
    let request = match rpc::Request::parse(&body) {
        Ok(r) => r,
        Err((id, e)) => return rpc::json_response(&rpc::error(&id, Wire::V1, &e)),
    };
    let id = request.id.clone();
    // Errors before the method is known are written on 1.0 unless the name looks like 0.3's.
    let guess = if request.method.contains('/') {
        Wire::V03
    } else {
        Wire::V1
    };
    let (op, wire) = match rpc::method(&request.method) {
        Ok(found) => found,
        Err(e) => return rpc::json_response(&rpc::error(&id, guess, &e)),
    };
    if let Some(e) = version_error(&headers) {
        return rpc::json_response(&rpc::error(&id, wire, &e));
    }
    let call = Call {
        state,
        owner: owner.0,
        agent,
        id,
        wire,
    };
    match call.op(op, &request.params, &headers).await {
        Ok(response) => response,
        Err(e) => rpc::json_response(&rpc::error(&call.id, wire, &e)),
    }
}

/// One request's context.
struct Call {
    state: AppState,
    owner: String,
    agent: String,
    id: Value,
    wire: Wire,
}

impl Call {
    async fn op(&self, op: Op, params: &Value, headers: &HeaderMap) -> Result<Response, RpcError> {
        let (state, owner, agent) = (&self.state, self.owner.as_str(), self.agent.as_str());
        let value = match op {
            Op::Send => return self.send(params, false).await,
            Op::Stream => return self.send(params, true).await,
            Op::Get => task::get(state, owner, agent, self.wire, params).await?,
            Op::Cancel => task::cancel(state, owner, agent, self.wire, params).await?,
            Op::Subscribe => {
                let begun = task::subscribe(state, owner, agent, params, headers).await?;
                let encoder = TaskStream::new(self.wire, self.id.clone(), begun.ids);
                let first = encoder.first(TaskState::Working, Vec::new());
                return Ok(self.stream(first, begun.events, encoder));
            }
        };
        Ok(rpc::json_response(&rpc::result(&self.id, value)))
    }

    /// `SendMessage` or `SendStreamingMessage`.
    async fn send(&self, params: &Value, streams: bool) -> Result<Response, RpcError> {
        let incoming = Incoming::parse(params)?;
        let begun = send::begin(&self.state, &self.owner, &self.agent, &incoming).await?;
        let mut user = params["message"].clone();
        user["taskId"] = Value::String(begun.ids.task.clone());
        user["contextId"] = Value::String(begun.ids.context.clone());
        let mut encoder = TaskStream::new(self.wire, self.id.clone(), begun.ids);
        let shapes = wire::Shapes(self.wire);
        let first_state = if begun.resumed {
            TaskState::Working
        } else {
            TaskState::Submitted
        };
        if streams {
            let first = encoder.first(first_state, vec![user]);
            return Ok(self.stream(first, begun.events, encoder));
        }
        if incoming.return_immediately {
            let task = encoder.task(first_state, None, vec![user]);
            return Ok(rpc::json_response(&rpc::result(
                &self.id,
                shapes.task_result(task),
            )));
        }
        follow(begun.events, &mut encoder).await;
        let (state, message) = encoder.end.clone().unwrap_or((TaskState::Working, None));
        let task = encoder.task(state, message, vec![user]);
        Ok(rpc::json_response(&rpc::result(
            &self.id,
            shapes.task_result(task),
        )))
    }

    fn stream(
        &self,
        first: String,
        events: BoxStream<'static, Arc<LoggedEvent>>,
        encoder: TaskStream,
    ) -> Response {
        let subscriber = self.state.metrics.sse_subscriber();
        event_stream(first, events, encoder, self.state.keep_alive, subscriber)
    }
}

/// Feeds the run's events to `encoder` until it has the task's end (or they run out).
async fn follow(mut events: BoxStream<'static, Arc<LoggedEvent>>, encoder: &mut TaskStream) {
    let mut ignored = String::new();
    while let Some(ev) = events.next().await {
        ignored.clear();
        if encoder.event(&ev, &mut ignored) {
            return;
        }
    }
}
