//! A send: the run a message asks for, through the session layer. A message without `taskId`
//! starts a task (a run) — in a new conversation, or in the conversation its `contextId`
//! names (a reagent conversation id, or the client's own id, made a conversation on first use);
//! a message with `taskId` answers the approvals that task's run waits on (yes or no, in text
//! or a data part) and the run goes on. A terminal task takes no more messages.

use std::sync::Arc;

use futures::stream::{BoxStream, StreamExt};
use uuid::Uuid;

use super::message::{decision, Incoming};
use super::rpc::{RpcError, UNSUPPORTED};
use super::wire::{Ids, State};
use crate::agent::events::{AgentEvent, EventView, StepEvent};
use crate::config::IMPLICIT_AGENT;
use crate::domain::MessageRole;
use crate::runs::session::{conversation_of, Answer, Answered, Ask, Decision, Thread};
use crate::runs::{title_after, LoggedEvent, PriorTurn, RunError, Started};
use crate::server::state::AppState;
use crate::store::NewConversation;

/// What a send began: the task and its events from where the client follows them.
pub struct Begun {
    pub ids: Ids,
    pub events: BoxStream<'static, Arc<LoggedEvent>>,
    /// An answered task going on (rather than a new one).
    pub resumed: bool,
}

/// Starts the task `message` asks for, or answers the one it names.
pub async fn begin(
    state: &AppState,
    owner: &str,
    agent: &str,
    message: &Incoming,
) -> Result<Begun, RpcError> {
    if let Some(task) = &message.task_id {
        return answer(state, owner, agent, task, message).await;
    }
    let query = if message.text.trim().is_empty() {
        // Data alone is the question, as JSON.
        serde_json::to_string(&message.data).unwrap_or_default()
    } else {
        message.text.clone()
    };
    let started = match &message.context_id {
        None => {
            let new = NewConversation {
                title: Some(title_after(&query)),
                agent: Some(agent.to_string()),
                ..NewConversation::default()
            };
            let ask = Ask {
                query,
                images: message.images.clone(),
                ..Ask::default()
            };
            state.runs.attach(owner, Thread::New(new), ask).await?
        }
        Some(context) => in_context(state, owner, agent, context, query, message).await?,
    };
    let live = started.live;
    Ok(Begun {
        ids: ids(live.id, live.conversation_id),
        events: open_approvals(state, owner, state.runs.live_events(&live, 0)),
        resumed: false,
    })
}

/// A task in the conversation `context` names: a stored one of the caller's, else the
/// client's own id made a conversation on first use.
async fn in_context(
    state: &AppState,
    owner: &str,
    agent: &str,
    context: &str,
    query: String,
    message: &Incoming,
) -> Result<Started, RpcError> {
    let ask = Ask {
        query: query.clone(),
        images: message.images.clone(),
        agent: Some(agent.to_string()),
        ..Ask::default()
    };
    let stored = Thread::Conversation(conversation_of(owner, context));
    match state.runs.attach(owner, stored, ask).await {
        Err(RunError::NotFound) => {}
        other => return Ok(other?),
    }
    let turn = PriorTurn {
        images: message.images.clone(),
        ..PriorTurn::text(MessageRole::User, query)
    };
    let thread = Thread::Client {
        id: context.to_string(),
        agent: agent.to_string(),
        turns: vec![turn],
    };
    Ok(state.runs.attach(owner, thread, Ask::default()).await?)
}

/// Answers the approvals the run of `task` waits on; its events after the last of them.
async fn answer(
    state: &AppState,
    owner: &str,
    agent: &str,
    task: &str,
    message: &Incoming,
) -> Result<Begun, RpcError> {
    let (row, conversation) = owned_task(state, owner, agent, task).await?;
    if message
        .context_id
        .as_deref()
        .is_some_and(|c| c != conversation.to_string())
    {
        return Err(RpcError::invalid("`contextId` is not the task's"));
    }
    let pending = awaited_approvals(state, owner, &row).await?;
    let (approve, reason) = decision(message).ok_or_else(|| {
        RpcError::invalid(
            "the task waits for an approval: answer yes or no, or send a data part {\"approved\": true|false}",
        )
    })?;
    let decisions = pending
        .into_iter()
        .map(|id| Decision {
            id,
            approve,
            reason: reason.clone(),
        })
        .collect();
    let thread = Thread::Conversation(conversation);
    let answered = state
        .runs
        .answer(owner, &thread, Answer::Approvals(decisions), None)
        .await?;
    let (run, conversation, events) = match answered {
        Answered::Resumed {
            run_id,
            conversation_id,
            after,
        } => (
            run_id,
            conversation_id,
            state.runs.events(owner, run_id, after).await?,
        ),
        Answered::Continued(started) => {
            let live = started.live;
            (
                live.id,
                live.conversation_id,
                state.runs.live_events(&live, 0),
            )
        }
    };
    Ok(Begun {
        ids: ids(run, conversation),
        events: open_approvals(state, owner, events),
        resumed: true,
    })
}

/// The approvals the run of a task waits on; the error when a message cannot answer the task
/// (it has ended, waits for caller tools, or waits for nothing).
async fn awaited_approvals(
    state: &AppState,
    owner: &str,
    row: &crate::store::RunRow,
) -> Result<Vec<String>, RpcError> {
    let current = State::of(row.status);
    if current.is_terminal() {
        return Err(RpcError::new(
            UNSUPPORTED,
            "the task has ended and takes no more messages: send one without taskId (in the same contextId) to go on",
        ));
    }
    if current == State::InputRequired {
        return Err(RpcError::new(
            UNSUPPORTED,
            "the task waits for the outputs of caller tools, which are answered through the API that declared them",
        ));
    }
    let pending = pending_approvals(state, owner, row.id).await?;
    if pending.is_empty() {
        return Err(RpcError::new(
            UNSUPPORTED,
            "the task is working and waits for no input: follow it, or cancel it",
        ));
    }
    Ok(pending)
}

pub fn ids(run: Uuid, conversation: Uuid) -> Ids {
    Ids {
        task: run.to_string(),
        context: conversation.to_string(),
    }
}

/// `owner`'s run `task` through agent `agent`, with its conversation; anything else (not a
/// UUID, another tenant's, another agent's) is `TaskNotFound`.
pub async fn owned_task(
    state: &AppState,
    owner: &str,
    agent: &str,
    task: &str,
) -> Result<(crate::store::RunRow, Uuid), RpcError> {
    let id = Uuid::parse_str(task).map_err(|_| RpcError::task_not_found())?;
    let row = state.runs.run(owner, id).await?;
    let conversation = state.runs.owned(owner, row.conversation_id).await?;
    if conversation.agent.as_deref().unwrap_or(IMPLICIT_AGENT) != agent {
        return Err(RpcError::task_not_found());
    }
    Ok((row, conversation.id))
}

/// The approvals run `run` waits on now.
pub async fn pending_approvals(
    state: &AppState,
    owner: &str,
    run: Uuid,
) -> Result<Vec<String>, RpcError> {
    let run = run.to_string();
    let all = state.runs.approvals_of(owner).await?;
    Ok(all
        .into_iter()
        .filter(|(_, info)| info.run_id == run)
        .map(|(id, _)| id.to_string())
        .collect())
}

/// `events` without the approvals that are decided by the time they are read: a replayed
/// approval someone answered already must not end a stream as `input-required`.
pub fn open_approvals(
    state: &AppState,
    owner: &str,
    events: BoxStream<'static, Arc<LoggedEvent>>,
) -> BoxStream<'static, Arc<LoggedEvent>> {
    let runs = state.runs.clone();
    let owner = owner.to_string();
    events
        .filter(move |ev| {
            // Read only where it may be one: every other event passes untouched.
            let maybe = ev.name == "step" && ev.data.contains("\"approval_required\"");
            let approval = match maybe.then(|| ev.view()) {
                Some(EventView::Agent(AgentEvent::Step(StepEvent::ApprovalRequired {
                    approval_id,
                    ..
                }))) => Some(approval_id),
                _ => None,
            };
            let runs = runs.clone();
            let owner = owner.clone();
            async move {
                let Some(id) = approval else { return true };
                match runs.approvals_of(&owner).await {
                    Ok(open) => open.iter().any(|(a, _)| a.to_string() == id),
                    // Unknown: shown, as the safer of the two.
                    Err(_) => true,
                }
            }
        })
        .boxed()
}
