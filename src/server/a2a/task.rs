//! `GetTask`, `CancelTask` and `SubscribeToTask` (and their 0.3 names): a task read back from
//! its run — the state from the run's status and the approvals it waits on, the history and
//! the answer artifact from the conversation's messages of that run — and a stopped or
//! followed run.

use axum::http::HeaderMap;
use serde_json::Value;
use uuid::Uuid;

use super::rpc::{RpcError, Wire, INTERNAL_ERROR, TASK_NOT_CANCELABLE, UNSUPPORTED};
use super::send::{ids, open_approvals, owned_task, pending_approvals, Begun};
use super::wire::{Shapes, State};
use crate::domain::{MessageKind, MessageRole, RunStatus};
use crate::server::state::AppState;

/// The id a task request names.
fn task_id(params: &Value) -> Result<&str, RpcError> {
    params["id"]
        .as_str()
        .ok_or_else(|| RpcError::invalid("`id` (the task's id) is required"))
}

/// The task as it stands now.
pub async fn get(
    state: &AppState,
    owner: &str,
    agent: &str,
    wire: Wire,
    params: &Value,
) -> Result<Value, RpcError> {
    let history_length = match &params["historyLength"] {
        Value::Null => None,
        v => Some(
            v.as_u64()
                .ok_or_else(|| RpcError::invalid("`historyLength` must be a whole number ≥ 0"))?,
        ),
    };
    read(state, owner, agent, wire, task_id(params)?, history_length).await
}

async fn read(
    state: &AppState,
    owner: &str,
    agent: &str,
    wire: Wire,
    task: &str,
    history_length: Option<u64>,
) -> Result<Value, RpcError> {
    let shapes = Shapes(wire);
    let (row, conversation) = owned_task(state, owner, agent, task).await?;
    let ids = ids(row.id, conversation);
    let mut current = State::of(row.status);
    if row.status == RunStatus::Running
        && !pending_approvals(state, owner, row.id).await?.is_empty()
    {
        current = State::InputRequired;
    }
    let (_, messages) = state
        .runs
        .conversation_with_messages(owner, conversation)
        .await?;
    let mine = messages.iter().filter(|m| m.run_id == Some(row.id));
    let mut history = Vec::new();
    let mut artifacts = Vec::new();
    for m in mine {
        let user = m.role == MessageRole::User;
        let part = shapes.text_part(&m.content);
        history.push(shapes.message(&m.id.to_string(), user, vec![part], &ids));
        if m.kind == MessageKind::Answer && current == State::Completed {
            artifacts = vec![shapes.answer(&m.content)];
        }
    }
    if let Some(n) = history_length {
        let keep = history.len().saturating_sub(n as usize);
        history.drain(..keep);
    }
    let message = match (current, &row.error) {
        (State::Failed, Some(error)) => {
            let part = shapes.text_part(error);
            Some(shapes.message(&format!("{}-error", ids.task), false, vec![part], &ids))
        }
        _ => None,
    };
    let status = shapes.status(current, message);
    Ok(shapes.task(&ids, status, artifacts, history))
}

/// Stops the task's run and waits for its end; the task then.
pub async fn cancel(
    state: &AppState,
    owner: &str,
    agent: &str,
    wire: Wire,
    params: &Value,
) -> Result<Value, RpcError> {
    let task = task_id(params)?;
    let (row, _) = owned_task(state, owner, agent, task).await?;
    if State::of(row.status).is_terminal() {
        return Err(RpcError::new(
            TASK_NOT_CANCELABLE,
            "the task has already ended",
        ));
    }
    if let Err(e) = state.runs.stop_and_wait(owner, row.id).await {
        let e = RpcError::from(e);
        return Err(RpcError::new(INTERNAL_ERROR, e.message));
    }
    read(state, owner, agent, wire, task, None).await
}

/// Follows the task's run: from the start, or after the event a client's `Last-Event-ID`
/// names (each streamed result carries its event's id).
pub async fn subscribe(
    state: &AppState,
    owner: &str,
    agent: &str,
    params: &Value,
    headers: &HeaderMap,
) -> Result<Begun, RpcError> {
    let task = task_id(params)?;
    let (row, conversation) = owned_task(state, owner, agent, task).await?;
    if State::of(row.status).is_terminal() {
        return Err(RpcError::new(
            UNSUPPORTED,
            "the task has ended: read it with GetTask",
        ));
    }
    let after = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .unwrap_or(0);
    let run: Uuid = row.id;
    let events = state.runs.events(owner, run, after).await?;
    Ok(Begun {
        ids: ids(run, conversation),
        events: open_approvals(state, owner, events),
        resumed: true,
    })
}
