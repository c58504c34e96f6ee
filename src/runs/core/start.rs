//! Starting a run: [`StartRun`] is what any API asks for (the conversation, existing or new,
//! and the query); [`RunManager::start`] checks it, takes the conversation's one run slot, has
//! it prepared (`prepare`: the model bound, the history read, the run stored with its query)
//! and spawns the run's task (`drive`).

use std::sync::Arc;

use dashmap::mapref::entry::Entry;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;
use uuid::Uuid;

use super::checks::{check_at_most, check_text};
use super::engines::RunEngine;
use super::follow_up::FollowUps;
use super::images::{check_allowance, check_images, QueryImage};
use super::log::EventLog;
use super::manager::{LiveRun, RunError, RunLabels, RunManager};
use super::prepare::{Prepared, Starting};
use super::request::{ConversationRef, StartRun, Started};
use crate::agent::checkpoint::Resume;
use crate::agent::{InterruptQueue, RunInput};
use crate::config::IMPLICIT_AGENT;
use crate::runs::budget::ledger::Ledger;
use crate::store::{Conversation, EVENT_ID_BLOCK};
use crate::telemetry::Context;

impl RunManager {
    /// Checks and starts a run of `owner`'s: 400-style `Invalid`/`UnknownModel`, `NotFound`
    /// for another tenant's conversation, `Active` if the conversation already has a run.
    ///
    /// Starting takes several awaits (history, run row) after the conversation's slot is
    /// taken. If the caller's future were dropped midway (a client hanging up makes hyper drop
    /// the handler's), the slot would stay taken with no task behind it; so the start runs in
    /// its own task, which the caller cannot cancel: once begun, a run is fully started.
    pub async fn start(
        self: &Arc<Self>,
        owner: &str,
        request: StartRun,
    ) -> Result<Arc<LiveRun>, RunError> {
        Ok(self.start_timed(owner, request).await?.live)
    }

    /// [`RunManager::start`], with the run's stored `started_at`.
    pub(in crate::runs) async fn start_timed(
        self: &Arc<Self>,
        owner: &str,
        request: StartRun,
    ) -> Result<Started, RunError> {
        let (me, owner) = (self.clone(), owner.to_string());
        // The caller's trace (an incoming `traceparent`): the run's span is its child.
        let parent = Context::current();
        tokio::spawn(async move { me.start_now(&owner, request, parent).await })
            .await
            .map_err(|e| RunError::Internal(format!("the run start task failed: {e}")))?
    }

    async fn start_now(
        self: &Arc<Self>,
        owner: &str,
        mut request: StartRun,
        parent: Context,
    ) -> Result<Started, RunError> {
        let images = self.check_request(&mut request)?;
        let (conv, is_new) = self.conversation_for(owner, &request).await?;
        if self.shutdown.is_cancelled() {
            return Err(RunError::ShuttingDown);
        }
        self.admit(owner).await?;
        let run_id = request.id.unwrap_or_else(Uuid::new_v4);
        self.take_slot(conv.id, run_id)?;
        let ledger = self.ledger_for(owner, run_id, &conv);
        let mut starting = Starting {
            owner,
            conv,
            run_id,
            is_new,
            parent,
            images,
            ledger,
        };
        match self.prepare(&mut request, &mut starting).await {
            Ok(prepared) => {
                let micros = prepared.started_at;
                let live = self.launch(&starting, prepared);
                tracing::info!(run_id = %live.id, conversation_id = %starting.conv.id, "run started");
                Ok(Started::at(live, micros))
            }
            Err(e) => {
                let conv = &starting.conv;
                self.active.remove(&conv.id);
                // Deleted between the read above and the run's insert (a foreign-key error).
                if matches!(e, RunError::Store(_))
                    && !is_new
                    && self.owned(owner, conv.id).await.is_err()
                {
                    return Err(RunError::NotFound);
                }
                Err(e)
            }
        }
    }

    /// The request's text rules (docs/api.md); its images checked and taken from it.
    fn check_request(&self, request: &mut StartRun) -> Result<Vec<QueryImage>, RunError> {
        let max = self.settings.max_query_chars;
        // A query may be its images alone ("what is this?" is often left unsaid).
        match request.images.is_empty() {
            true => check_text("query", &request.query, max)?,
            false => check_at_most("query", &request.query, max)?,
        }
        // Taken, not copied: a `data:` URL is megabytes, and the run keeps it as it came.
        let images = check_images(std::mem::take(&mut request.images))?;
        check_allowance(&images, self.settings.max_run_image_bytes)?;
        self.check_history(request)?;
        if request.max_iterations == Some(0) {
            return Err(RunError::Invalid(
                "max_iterations must be at least 1".into(),
            ));
        }
        Ok(images)
    }

    /// The run's conversation (`true`: a new one, not stored yet), checked against the agent
    /// the request names.
    async fn conversation_for(
        &self,
        owner: &str,
        request: &StartRun,
    ) -> Result<(Conversation, bool), RunError> {
        let (conv, is_new) = match &request.conversation {
            ConversationRef::Existing(id) => (self.owned(owner, *id).await?, false),
            ConversationRef::New(new) => {
                let mut conv = self.draft_conversation(owner, new.clone()).await?;
                conv.id = request.conversation_id.unwrap_or(conv.id);
                (conv, true)
            }
        };
        if let Some(expected) = &request.agent {
            // A conversation without an agent runs the default settings: the implicit agent's.
            let has = conv.agent.as_deref().unwrap_or(IMPLICIT_AGENT);
            if has != expected {
                return Err(RunError::AgentMismatch {
                    conversation: has.to_string(),
                    requested: expected.clone(),
                });
            }
        }
        Ok((conv, is_new))
    }

    /// Takes the conversation's one run slot for `run_id`: `Active` when a run holds it,
    /// `NotFound` when the conversation is being deleted.
    pub(in crate::runs) fn take_slot(
        &self,
        conversation: Uuid,
        run_id: Uuid,
    ) -> Result<(), RunError> {
        match self.active.entry(conversation) {
            Entry::Occupied(_) => return Err(RunError::Active),
            Entry::Vacant(v) => {
                v.insert(run_id);
            }
        }
        // Checked after taking the slot: a delete marks first and then looks at the slot, so
        // either this start sees the mark or the delete sees (and stops) this run.
        if self.deleting.contains_key(&conversation) {
            self.active.remove(&conversation);
            return Err(RunError::NotFound);
        }
        Ok(())
    }

    /// Supplied history seeds new conversations only, and each turn obeys the query's rules.
    pub(in crate::runs) fn check_history(&self, request: &StartRun) -> Result<(), RunError> {
        if request.history.is_empty() {
            return Ok(());
        }
        if matches!(request.conversation, ConversationRef::Existing(_)) {
            return Err(RunError::Invalid(
                "a history can only be given with a new conversation".into(),
            ));
        }
        for turn in &request.history {
            check_at_most("history", &turn.content, self.settings.max_query_chars)?;
        }
        Ok(())
    }

    /// `owner`'s conversation, or `NotFound`.
    pub async fn owned(&self, owner: &str, id: Uuid) -> Result<Conversation, RunError> {
        self.store
            .get_conversation(owner, id)
            .await?
            .ok_or(RunError::NotFound)
    }

    /// The run's live state and its task (the run's slot is already taken).
    fn launch(self: &Arc<Self>, s: &Starting<'_>, prepared: Prepared) -> Arc<LiveRun> {
        let queue = Arc::new(InterruptQueue::new());
        // The run's row was committed with its first block of ids reserved.
        let log = EventLog::with_ceiling(EVENT_ID_BLOCK as u64);
        // Created with its lease at epoch 1 (see `Store::hold_leases_as`).
        let ledger = s.ledger.clone();
        let live = self.live_run_of(s.owner, s.conv.id, s.run_id, 1, log, ledger);
        let Prepared {
            engine,
            input,
            labels,
            ..
        } = prepared;
        self.spawn_run(live.clone(), engine, input, queue, None, labels);
        live
    }

    /// A run's live state (not yet registered).
    pub(in crate::runs) fn live_run_of(
        &self,
        owner: &str,
        conversation_id: Uuid,
        run_id: Uuid,
        epoch: i64,
        log: EventLog,
        ledger: Arc<Ledger>,
    ) -> Arc<LiveRun> {
        Arc::new(LiveRun {
            id: run_id,
            conversation_id,
            owner: owner.to_string(),
            epoch,
            lost: CancellationToken::new(),
            log: Arc::new(log),
            cancel: self.runs_cancel.child_token(),
            done: CancellationToken::new(),
            progress: Arc::default(),
            follow_ups: FollowUps::default(),
            ledger,
        })
    }

    /// Registers the live run and its queue and spawns its task (the slot is already taken);
    /// `resume`: go on from that checkpoint instead of starting; `labels`: the run's agent and
    /// span (the context its work runs in).
    pub(in crate::runs) fn spawn_run(
        self: &Arc<Self>,
        live: Arc<LiveRun>,
        agent: RunEngine,
        input: RunInput,
        queue: Arc<InterruptQueue>,
        resume: Option<Resume>,
        labels: RunLabels,
    ) {
        let (run_id, conv) = (live.id, live.conversation_id);
        self.queues.insert(conv, queue.clone());
        self.live.insert(run_id, live.clone());
        let me = self.clone();
        let handover = self.handover.clone();
        // Every log line of the run carries its ids.
        let span = tracing::info_span!("run", run_id = %run_id, conversation_id = %conv);
        let work = labels.trace.clone();
        let run = async move {
            let lost = live.lost.clone();
            tokio::select! {
                biased;
                () = handover.cancelled() => me.handed_over(&live),
                () = lost.cancelled() => me.lost(&live),
                () = me.clone().drive(live.clone(), agent, input, queue, resume, labels) => {}
            }
        };
        self.tracker.spawn(work.scope(run).instrument(span));
    }
}
