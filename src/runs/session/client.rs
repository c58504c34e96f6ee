//! A client's own thread id as a conversation ([`conversation_of`]), found with the agent it
//! must run, and what of the history the client resends is new ([`new_query`]).

use sha2::{Digest, Sha256};
use uuid::Uuid;

use crate::config::IMPLICIT_AGENT;
use crate::domain::MessageRole;
use crate::runs::core::history::PriorTurn;
use crate::runs::core::manager::{RunError, RunManager};
use crate::store::{Conversation, StoredMessage};

/// A client thread's conversation as stored, with its messages (`None`: not stored yet).
pub(super) type Found = Option<(Conversation, Vec<StoredMessage>)>;

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

impl RunManager {
    /// `owner`'s client thread `thread`: its conversation id and, once stored, the
    /// conversation with its messages; `Conflict` when it runs another agent than `agent`.
    pub(super) async fn client_thread(
        &self,
        owner: &str,
        thread: &str,
        agent: &str,
    ) -> Result<(Uuid, Found), RunError> {
        let id = conversation_of(owner, thread);
        let existing = match self.conversation_with_messages(owner, id).await {
            Ok(found) => Some(found),
            // Another tenant's, or the caller's own, stored meanwhile by a racing first request
            // of the thread: looked up again, that one is found (then this request is a 409).
            Err(RunError::NotFound) if self.conversation_exists(id).await? => {
                Some(self.conversation_with_messages(owner, id).await?)
            }
            Err(RunError::NotFound) => None,
            Err(e) => return Err(e),
        };
        if let Some((conv, _)) = &existing {
            let own = conv.agent.as_deref().unwrap_or(IMPLICIT_AGENT);
            if own != agent {
                return Err(RunError::Conflict(format!(
                    "the thread belongs to agent '{own}', not '{agent}'"
                )));
            }
        }
        Ok((id, existing))
    }
}

/// The new part of a resent history: the user turns after the last assistant turn, less those
/// the conversation already stored (`stored`: its queries, oldest first, matched from the start
/// of the client's user turns — a client that missed an answer still resends its question),
/// joined; and the turns before them (a new conversation is seeded with those). A turn may be
/// its images alone; the new turns' images are the query's ([`new_images`]).
pub fn new_query(turns: &[PriorTurn], stored: &[String]) -> Option<(String, Vec<PriorTurn>)> {
    let start = new_start(turns, stored);
    let asked: Vec<&PriorTurn> = turns[start..].iter().filter(|t| said(t)).collect();
    if asked.is_empty() {
        return None;
    }
    let text: Vec<&str> = asked
        .iter()
        .map(|t| t.content.as_str())
        .filter(|t| !t.trim().is_empty())
        .collect();
    let earlier = turns[..start].iter().filter(|t| said(t)).cloned().collect();
    Some((text.join("\n\n"), earlier))
}

/// The images of the new user turns ([`new_query`]'s), in order.
pub fn new_images(turns: &[PriorTurn], stored: &[String]) -> Vec<String> {
    turns[new_start(turns, stored)..]
        .iter()
        .flat_map(|t| t.images.iter().cloned())
        .collect()
}

/// A turn with something in it: text or images.
fn said(t: &PriorTurn) -> bool {
    !t.content.trim().is_empty() || !t.images.is_empty()
}

/// Where the new part of a resent history starts ([`new_query`]).
fn new_start(turns: &[PriorTurn], stored: &[String]) -> usize {
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
        .take_while(|(&i, s)| s.starts_with(turns[i].content.trim()))
        .count();
    users
        .get(known)
        .map_or(turns.len(), |&i| i.max(after_answer))
}
