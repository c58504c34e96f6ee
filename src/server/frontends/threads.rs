//! What both front-end protocols do with a request before encoding anything: the client's
//! thread (chat) id becomes a conversation, its whole history is reduced to what is new, and the
//! request either starts a run or answers the approvals a run is waiting on and follows it on.

use std::collections::HashSet;
use std::sync::Arc;

use futures::stream::{BoxStream, StreamExt};
use sha2::{Digest, Sha256};
use uuid::Uuid;

use crate::agent::client_tools::ToolOutput;
use crate::agent::events::StepEvent;
use crate::config::IMPLICIT_AGENT;
use crate::domain::{EventName, MessageKind, MessageRole};
use crate::llm::ToolDefinition;
use crate::runs::{title_after, ConversationRef, LoggedEvent, PriorTurn, RunError, StartRun};
use crate::server::state::AppState;
use crate::server::ApiError;
use crate::store::NewConversation;

/// One turn of the client's history, as far as reagent reads it.
#[derive(Clone, Debug, PartialEq)]
pub struct ClientTurn {
    pub role: MessageRole,
    pub text: String,
    /// A user turn's image URLs (`data:` or `http(s)`).
    pub images: Vec<String>,
}

/// A client's answer to an approval a run waits on.
#[derive(Clone, Debug, PartialEq)]
pub struct ApprovalAnswer {
    pub id: String,
    pub approve: bool,
    pub reason: Option<String>,
}

/// What a front-end request asks for, protocol aside.
#[derive(Debug)]
pub struct FrontRequest {
    pub agent: String,
    pub thread: String,
    /// The client's whole history, oldest first (user and assistant text only).
    pub turns: Vec<ClientTurn>,
    /// Extra context for this run (AG-UI `context`), a section of its system prompt.
    pub context: Option<String>,
    /// Answers to open approvals: when present, no run starts.
    pub answers: Vec<ApprovalAnswer>,
    /// Caller tools the run may call (the client runs them).
    pub tools: Vec<ToolDefinition>,
    /// Outputs of the caller tool calls the thread's latest run waits for: when present, they
    /// start its continuation instead of a new run.
    pub outputs: Vec<ToolOutput>,
}

/// The run a front-end stream follows.
pub struct Attached {
    pub run_id: Uuid,
    pub conversation_id: Uuid,
    pub events: BoxStream<'static, Arc<LoggedEvent>>,
    /// The stream goes on after answered approvals (no `start` follows).
    pub resumed: bool,
}

/// The conversation a thread id names: the id itself when it is a UUID (any reagent
/// conversation), else one derived from the caller and the id, so the same client id of two
/// tenants never meets.
pub fn conversation_of(owner: &str, thread: &str) -> Uuid {
    if let Ok(id) = Uuid::parse_str(thread.trim()) {
        return id;
    }
    let digest = Sha256::new()
        .chain_update(owner.as_bytes())
        .chain_update([0u8])
        .chain_update(thread.as_bytes())
        .finalize();
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    uuid::Builder::from_custom_bytes(bytes).into_uuid()
}

/// The new part of a resent history: the user turns after the last assistant turn, less those
/// the conversation already stored (`stored`: its queries, oldest first, matched from the start
/// of the client's user turns — a client that missed an answer still resends its question),
/// joined; and the turns before them (a new conversation is seeded with those). A turn may be
/// its images alone; the new turns' images are the query's ([`new_images`]).
pub fn new_query(turns: &[ClientTurn], stored: &[String]) -> Option<(String, Vec<PriorTurn>)> {
    let start = new_start(turns, stored);
    let asked: Vec<&ClientTurn> = turns[start..].iter().filter(|t| said(t)).collect();
    if asked.is_empty() {
        return None;
    }
    let text: Vec<&str> = asked
        .iter()
        .map(|t| t.text.as_str())
        .filter(|t| !t.trim().is_empty())
        .collect();
    let earlier = turns[..start]
        .iter()
        .filter(|t| said(t))
        .map(|t| PriorTurn {
            images: t.images.clone(),
            ..PriorTurn::text(t.role, t.text.clone())
        })
        .collect();
    Some((text.join("\n\n"), earlier))
}

/// The images of the new user turns ([`new_query`]'s), in order.
pub fn new_images(turns: &[ClientTurn], stored: &[String]) -> Vec<String> {
    turns[new_start(turns, stored)..]
        .iter()
        .flat_map(|t| t.images.iter().cloned())
        .collect()
}

/// A turn with something in it: text or images.
fn said(t: &ClientTurn) -> bool {
    !t.text.trim().is_empty() || !t.images.is_empty()
}

/// Where the new part of a resent history starts ([`new_query`]).
fn new_start(turns: &[ClientTurn], stored: &[String]) -> usize {
    let after_answer = turns
        .iter()
        .rposition(|t| t.role == MessageRole::Assistant)
        .map_or(0, |i| i + 1);
    let users: Vec<usize> = (0..turns.len())
        .filter(|&i| turns[i].role == MessageRole::User)
        .collect();
    let known = users
        .iter()
        .zip(stored)
        .take_while(|(&i, s)| s.starts_with(turns[i].text.trim()))
        .count();
    users
        .get(known)
        .map_or(turns.len(), |&i| i.max(after_answer))
}

/// Starts the run a request asks for, or answers the approvals it carries and follows their run.
pub async fn begin(state: &AppState, owner: &str, req: FrontRequest) -> Result<Attached, ApiError> {
    let id = conversation_of(owner, &req.thread);
    let existing = match state.runs.conversation_with_messages(owner, id).await {
        Ok(found) => Some(found),
        // Another tenant's, or the caller's own, stored meanwhile by a racing first request of
        // the thread: looked up again, that one is found (then this request is a 409).
        Err(RunError::NotFound) if state.runs.conversation_exists(id).await? => {
            match state.runs.conversation_with_messages(owner, id).await {
                Ok(found) => Some(found),
                Err(RunError::NotFound) => return Err(ApiError::NotFound),
                Err(e) => return Err(e.into()),
            }
        }
        Err(RunError::NotFound) => None,
        Err(e) => return Err(e.into()),
    };
    if let Some((conv, _)) = &existing {
        let own = conv.agent.as_deref().unwrap_or(IMPLICIT_AGENT);
        if own != req.agent {
            return Err(ApiError::Conflict(format!(
                "the thread belongs to agent '{own}', not '{}'",
                req.agent
            )));
        }
    }
    if !req.outputs.is_empty() {
        let run = state.runs.waiting_run(owner, id).await?;
        let live = state
            .runs
            .submit_tool_outputs(owner, run, req.outputs)
            .await?;
        return Ok(Attached {
            run_id: live.id,
            conversation_id: live.conversation_id,
            events: state.runs.live_events(&live, 0),
            resumed: true,
        });
    }
    if !req.answers.is_empty() {
        let run_id = existing
            .as_ref()
            .and_then(|(c, _)| c.active_run_id)
            .ok_or_else(|| ApiError::Conflict("no run of this thread is waiting".into()))?;
        return resume(state, owner, id, run_id, &req.answers).await;
    }
    let stored: Vec<String> = existing
        .iter()
        .flat_map(|(_, messages)| messages)
        .filter(|m| m.role == MessageRole::User && m.kind == MessageKind::Query)
        .map(|m| m.content.clone())
        .collect();
    let images = new_images(&req.turns, &stored);
    let (query, history) = new_query(&req.turns, &stored).ok_or_else(|| {
        // The thread already holds every question sent: nothing new to run (a 409, like a
        // busy thread, since the same body may be valid against another thread).
        ApiError::Conflict("the messages end without a new user message".into())
    })?;
    let mut request = match existing {
        Some(_) => StartRun::new(ConversationRef::Existing(id), query),
        None => StartRun {
            conversation_id: Some(id),
            history,
            ..StartRun::new(
                ConversationRef::New(NewConversation {
                    title: Some(title_after(&query)),
                    agent: Some(req.agent.clone()),
                    ..NewConversation::default()
                }),
                query,
            )
        },
    };
    request.client_tools = req.tools;
    request.context = req.context;
    request.images = images;
    let live = state.runs.start(owner, request).await?;
    let events = state.runs.live_events(&live, 0);
    Ok(Attached {
        run_id: live.id,
        conversation_id: live.conversation_id,
        events,
        resumed: false,
    })
}

/// Answers every open approval of `run_id` the client was told about, then follows the run
/// from just after the last of them. An approval the run is not waiting on is 409; one it was
/// told about and left unanswered is 400 (a partial resume would leave the run waiting).
async fn resume(
    state: &AppState,
    owner: &str,
    conversation_id: Uuid,
    run_id: Uuid,
    answers: &[ApprovalAnswer],
) -> Result<Attached, ApiError> {
    let run = run_id.to_string();
    let pending: HashSet<String> = state
        .runs
        .approvals_of(owner)
        .await?
        .into_iter()
        .filter(|(_, info)| info.run_id == run)
        .map(|(id, _)| id.to_string())
        .collect();
    let answered: HashSet<&str> = answers.iter().map(|a| a.id.as_str()).collect();
    if let Some(gone) = answers.iter().find(|a| !pending.contains(&a.id)) {
        return Err(ApiError::Conflict(format!(
            "interrupt '{}' is not open (answered, timed out or unknown)",
            gone.id
        )));
    }
    let (cut, announced) = announced_until(state, owner, run_id, &answered).await?;
    let missing: Vec<&String> = announced
        .iter()
        .filter(|id| pending.contains(*id) && !answered.contains(id.as_str()))
        .collect();
    if !missing.is_empty() {
        let list: Vec<&str> = missing.iter().map(|s| s.as_str()).collect();
        return Err(ApiError::invalid(format!(
            "resume must answer every open interrupt; missing: {}",
            list.join(", ")
        )));
    }
    for a in answers {
        let id = Uuid::parse_str(&a.id).map_err(|_| ApiError::NotFound)?;
        state
            .runs
            .decide_approval(owner, id, a.approve, a.reason.clone())
            .await?;
    }
    let events = state.runs.events(owner, run_id, cut).await?;
    Ok(Attached {
        run_id,
        conversation_id,
        events,
        resumed: true,
    })
}

/// Reads the run's events until every id of `wanted` has had its `approval_required`: the id of
/// the last of those events, and every approval announced up to it.
async fn announced_until(
    state: &AppState,
    owner: &str,
    run_id: Uuid,
    wanted: &HashSet<&str>,
) -> Result<(u64, Vec<String>), ApiError> {
    let mut events = state.runs.events(owner, run_id, 0).await?;
    let mut seen = Vec::new();
    let mut left = wanted.len();
    while left > 0 {
        let Some(ev) = events.next().await else {
            return Err(ApiError::Conflict(
                "the run ended before its approvals".into(),
            ));
        };
        if EventName::from_stored(ev.name) != EventName::Step {
            continue;
        }
        if let Ok(StepEvent::ApprovalRequired { approval_id, .. }) =
            serde_json::from_str::<StepEvent>(&ev.data)
        {
            if wanted.contains(approval_id.as_str()) {
                left -= 1;
                if left == 0 {
                    seen.push(approval_id);
                    return Ok((ev.id, seen));
                }
            }
            seen.push(approval_id);
        }
    }
    Ok((0, seen))
}

#[cfg(test)]
mod tests;
