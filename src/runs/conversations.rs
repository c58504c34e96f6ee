//! Conversations as the run manager sees them: created only with models and tools it can run,
//! and deleted only once their active run has stopped writing.

use std::time::Duration;

use uuid::Uuid;

use super::core::checks::{check_at_most, MAX_TITLE_CHARS};
use super::core::manager::{RunError, RunManager};
use crate::domain::RunStatus;
use crate::store::{Conversation, NewConversation, Store, StoredMessage};

/// How long a delete waits for a cancelled run to write its final state.
const CANCEL_WAIT: Duration = Duration::from_secs(5);

/// While it lives, no run can start in the conversation.
struct DeletingMark<'a> {
    runs: &'a RunManager,
    id: Uuid,
}

impl<'a> DeletingMark<'a> {
    fn new(runs: &'a RunManager, id: Uuid) -> Self {
        runs.deleting.insert(id, ());
        Self { runs, id }
    }
}

impl Drop for DeletingMark<'_> {
    fn drop(&mut self) {
        self.runs.deleting.remove(&self.id);
    }
}

impl RunManager {
    /// Cancels the conversation's active run and waits for its final write. A start that took
    /// the slot but has not launched its run yet is waited for, then cancelled.
    async fn stop_active_run(&self, owner: &str, id: Uuid) {
        while let Some(run_id) = self.active_run_of(id) {
            match self.live_run(owner, run_id) {
                Some(live) => {
                    live.cancel.cancel();
                    live.finished().await;
                }
                None => tokio::time::sleep(Duration::from_millis(2)).await,
            }
        }
    }

    /// Stores a new conversation of `owner`'s once [`RunManager::check_conversation`] passes.
    pub async fn create_conversation(
        &self,
        owner: &str,
        new: NewConversation,
    ) -> Result<Conversation, RunError> {
        let new = self.check_conversation(owner, new).await?;
        Ok(self.store.create_conversation(owner, new).await?)
    }

    /// Whether `id` is a conversation of anyone's (docs/protocols.md: a front end's thread id).
    pub async fn conversation_exists(&self, id: Uuid) -> Result<bool, RunError> {
        Ok(self.store.conversation_exists(id).await?)
    }

    /// A checked new conversation of `owner`'s, not stored yet (a run stores it with itself).
    pub(super) async fn draft_conversation(
        &self,
        owner: &str,
        new: NewConversation,
    ) -> Result<Conversation, RunError> {
        let new = self.check_conversation(owner, new).await?;
        Ok(Store::draft_conversation(owner, new))
    }

    /// A new conversation's text must be storable and bounded, its agent one of `owner`'s,
    /// its model and tools configured. Returned with its API agent's version recorded.
    async fn check_conversation(
        &self,
        owner: &str,
        mut new: NewConversation,
    ) -> Result<NewConversation, RunError> {
        let title = new.title.as_deref().unwrap_or_default();
        check_at_most("title", title, MAX_TITLE_CHARS)?;
        // Every run sends it in full and it is pinned: one as large as the query limit is
        // already a quarter of a 128k-token window.
        check_at_most(
            "system_prompt",
            new.system_prompt.as_deref().unwrap_or_default(),
            self.settings.max_query_chars,
        )?;
        new.agent_version = self.agent_version_of(owner, &new).await?;
        if let Some(model) = &new.model {
            if self.models.get(model).is_none() {
                return Err(RunError::UnknownModel(model.clone()));
            }
        }
        if let Some(tools) = &new.tools {
            let known = self.tools();
            if let Some(bad) = tools.iter().find(|t| known.get(t).is_none()) {
                return Err(RunError::Invalid(format!("unknown tool '{bad}'")));
            }
        }
        Ok(new)
    }

    /// The version of its agent a new conversation records: the one asked for, else an API
    /// agent's latest (`None` for a configured agent).
    async fn agent_version_of(
        &self,
        owner: &str,
        new: &NewConversation,
    ) -> Result<Option<u32>, RunError> {
        let Some(agent) = &new.agent else {
            return match new.agent_version {
                Some(_) => Err(RunError::Invalid(
                    "agent_version: name the agent it is a version of".into(),
                )),
                None => Ok(None),
            };
        };
        if let Some(found) = self.catalog.get(owner, agent, new.agent_version).await? {
            return Ok(found.version);
        }
        match new.agent_version {
            Some(v) if self.catalog.get(owner, agent, None).await?.is_some() => {
                Err(RunError::Invalid(format!(
                    "agent_version: the agent '{agent}' has no version {v}"
                )))
            }
            _ => Err(RunError::UnknownAgent(agent.clone())),
        }
    }

    /// `owner`'s conversation with its messages, oldest first.
    pub async fn conversation_with_messages(
        &self,
        owner: &str,
        id: Uuid,
    ) -> Result<(Conversation, Vec<StoredMessage>), RunError> {
        let conversation = self.owned(owner, id).await?;
        let messages = self.store.list_messages(id).await?;
        Ok((conversation, messages))
    }

    /// Renames `owner`'s conversation; `NotFound` for another tenant's.
    pub async fn rename_conversation(
        &self,
        owner: &str,
        id: Uuid,
        title: &str,
    ) -> Result<Conversation, RunError> {
        check_at_most("title", title, MAX_TITLE_CHARS)?;
        self.store
            .rename_conversation(owner, id, title)
            .await?
            .ok_or(RunError::NotFound)
    }

    /// Deletes `owner`'s conversation, cancelling its active run first and waiting (bounded)
    /// for the run's final write, so the run does not write into rows being deleted.
    pub async fn delete_conversation(&self, owner: &str, id: Uuid) -> Result<(), RunError> {
        self.owned(owner, id).await?;
        let _marked = DeletingMark::new(self, id);
        if tokio::time::timeout(CANCEL_WAIT, self.stop_active_run(owner, id))
            .await
            .is_err()
        {
            tracing::warn!(conversation_id = %id, "its run did not stop before the conversation was deleted");
        }
        // A run on another instance (docs/deployment.md): cancelled through its owner, waited for too.
        if !self.stop_run_elsewhere(id, CANCEL_WAIT).await? {
            tracing::warn!(conversation_id = %id, "its run on another instance did not stop before the conversation was deleted");
        }
        if self.store.delete_conversation(owner, id).await? {
            Ok(())
        } else {
            Err(RunError::NotFound)
        }
    }

    /// Forks `owner`'s conversation `id` (docs/api.md): a new conversation with its settings
    /// and its history up to and including run `until_run`'s turn (none without it), titled
    /// after the original. `Invalid` when the run is not a finished run of that conversation.
    pub async fn fork_conversation(
        &self,
        owner: &str,
        id: Uuid,
        until_run: Option<Uuid>,
    ) -> Result<Conversation, RunError> {
        let source = self.owned(owner, id).await?;
        if let Some(run_id) = until_run {
            let run = self.store.get_run(owner, run_id).await?;
            match run {
                Some(r) if r.conversation_id == id && r.status != RunStatus::Running => {}
                Some(r) if r.conversation_id == id => {
                    return Err(RunError::Conflict(format!(
                        "until_run_id: the run {run_id} has not finished"
                    )))
                }
                // A turn this fork (of a fork, …) copied keeps its run's id; it had finished
                // when it was copied, and its run may be gone with the original since.
                _ if self.store.holds_turn_of(id, run_id).await? => {}
                // Not a run of this conversation: not found, like any id the caller cannot see.
                _ => return Err(RunError::NotFound),
            }
        }
        let title = fork_title(source.title.as_deref());
        Ok(self
            .store
            .fork_conversation(&source, until_run, Some(title))
            .await?)
    }
}

/// `<title> (fork)`, cut so that it stays within the title limit.
fn fork_title(title: Option<&str>) -> String {
    const SUFFIX: &str = " (fork)";
    let base = title.unwrap_or("Conversation");
    let room = MAX_TITLE_CHARS.saturating_sub(SUFFIX.chars().count());
    let mut out: String = base.chars().take(room).collect();
    out.push_str(SUFFIX);
    out
}
