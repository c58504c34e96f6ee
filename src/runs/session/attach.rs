//! Attach: a request's run on its [`Thread`]. "After run X" is deterministic under races:
//! the first request to start continues X's conversation; one that finds it taken meanwhile
//! (busy, or moved on past X) continues in a fork at X, as it would have a moment later —
//! refused (`Active`) only while X itself still runs.

use std::sync::Arc;

use uuid::Uuid;

use super::{new_images, new_query, Ask, Thread};
use crate::domain::{MessageKind, MessageRole, RunStatus};
use crate::runs::core::manager::{RunError, RunManager};
use crate::runs::core::request::{title_after, ConversationRef, StartRun, Started};
use crate::store::{NewConversation, StoreError};

impl RunManager {
    /// Starts `ask` on `thread` for `owner`. Errors are [`RunManager::start`]'s; besides,
    /// `NotFound` for a run X that is not `owner`'s, `Conflict` for a client thread of
    /// another agent or a resent history with nothing new in it.
    pub async fn attach(
        self: &Arc<Self>,
        owner: &str,
        thread: Thread,
        mut ask: Ask,
    ) -> Result<Started, RunError> {
        match thread {
            Thread::New(new) => {
                let request = StartRun {
                    history: std::mem::take(&mut ask.history),
                    ..start_of(ConversationRef::New(new), ask)
                };
                self.start_timed(owner, request).await
            }
            Thread::Conversation(id) => {
                let request = start_of(ConversationRef::Existing(id), ask);
                self.start_timed(owner, request).await
            }
            Thread::Client { id, agent, turns } => {
                self.attach_client(owner, &id, &agent, &turns, ask).await
            }
            Thread::After(run) => self.attach_after(owner, run, ask).await,
        }
    }

    /// A client thread's run: in its conversation (stored on first use, seeded with the turns
    /// before the new ones), asking what the conversation does not hold yet.
    async fn attach_client(
        self: &Arc<Self>,
        owner: &str,
        thread: &str,
        agent: &str,
        turns: &[super::PriorTurn],
        ask: Ask,
    ) -> Result<Started, RunError> {
        let (id, existing) = self.client_thread(owner, thread, agent).await?;
        let stored: Vec<String> = existing
            .iter()
            .flat_map(|(_, messages)| messages)
            .filter(|m| m.role == MessageRole::User && m.kind == MessageKind::Query)
            .map(|m| m.content.clone())
            .collect();
        let images = new_images(turns, &stored);
        let (query, history) = new_query(turns, &stored).ok_or_else(|| {
            // The thread already holds every question sent: nothing new to run (a 409, like
            // a busy thread, since the same body may be valid against another thread).
            RunError::Conflict("the messages end without a new user message".into())
        })?;
        let ask = Ask {
            query,
            images,
            agent: None,
            ..ask
        };
        let request = match existing {
            Some(_) => start_of(ConversationRef::Existing(id), ask),
            None => {
                let new = NewConversation {
                    title: Some(title_after(&ask.query)),
                    agent: Some(agent.to_string()),
                    ..NewConversation::default()
                };
                StartRun {
                    conversation_id: Some(id),
                    history,
                    ..start_of(ConversationRef::New(new), ask)
                }
            }
        };
        self.start_timed(owner, request).await
    }

    /// A run after run `run`: in its conversation while `run` is the latest there (checked in
    /// the start's transaction), else in a fork at `run`.
    async fn attach_after(
        self: &Arc<Self>,
        owner: &str,
        run: Uuid,
        ask: Ask,
    ) -> Result<Started, RunError> {
        let row = self
            .store
            .get_run(owner, run)
            .await?
            .ok_or(RunError::NotFound)?;
        let latest = self.store.latest_run(row.conversation_id).await?;
        if latest.map(|r| r.id) != Some(run) {
            return self
                .start_in_fork(owner, row.conversation_id, run, ask)
                .await;
        }
        let join = StartRun {
            after_run: Some(run),
            // Kept for a fork only while joining could fail (megabytes each).
            ..start_of(ConversationRef::Existing(row.conversation_id), ask.clone())
        };
        match self.start_timed(owner, join).await {
            // Taken meanwhile: another run started there, or (its start's transaction says)
            // began and ended since `run` was found to be the latest.
            Err(RunError::Active | RunError::Store(StoreError::Conflict(_))) => {}
            other => return other,
        }
        // `run` itself still running keeps its conversation busy.
        if self.run(owner, run).await?.status == RunStatus::Running {
            return Err(RunError::Active);
        }
        self.start_in_fork(owner, row.conversation_id, run, ask)
            .await
    }

    /// Starts `ask` in a fork of `conversation` at `run`, deleted again if the start fails.
    async fn start_in_fork(
        self: &Arc<Self>,
        owner: &str,
        conversation: Uuid,
        run: Uuid,
        ask: Ask,
    ) -> Result<Started, RunError> {
        let fork = self
            .fork_conversation(owner, conversation, Some(run))
            .await?;
        let request = start_of(ConversationRef::Existing(fork.id), ask);
        let started = self.start_timed(owner, request).await;
        if started.is_err() {
            let _ = self.delete_conversation(owner, fork.id).await;
        }
        started
    }
}

/// The run `ask` asks for in `conversation` (its history aside: a new conversation's only).
fn start_of(conversation: ConversationRef, ask: Ask) -> StartRun {
    StartRun {
        agent: ask.agent,
        images: ask.images,
        client_tools: ask.client_tools,
        context: ask.context,
        record: ask.record,
        ..StartRun::new(conversation, ask.query)
    }
}
