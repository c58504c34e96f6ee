//! Starting a run: [`StartRun`] is what any API asks for (the conversation, existing or new,
//! and the query); [`RunManager::start`] checks it, takes the conversation's one run slot,
//! binds the model ([`ModelRegistry::resolve`](crate::llm::registry::ModelRegistry::resolve)),
//! reads the history, stores the run with its query and spawns the run's task (`drive`).

use std::sync::Arc;

use dashmap::mapref::entry::Entry;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;
use uuid::Uuid;

use super::checks::{check_at_most, check_text};
use super::continuation::check_caller_tools;
use super::engines::RunEngine;
use super::follow_up::FollowUps;
use super::history::{seed, Seed};
use super::images::{
    check_allowance, check_images, image_bytes, load_images, stage_images, QueryImage,
};
use super::ledger::Ledger;
use super::log::EventLog;
use super::manager::{LiveRun, RunError, RunLabels, RunManager};
use super::request::{ConversationRef, StartRun, Started};
use crate::agent::checkpoint::Resume;
use crate::agent::context::estimate_tokens;
use crate::agent::{InterruptQueue, RunInput};
use crate::config::IMPLICIT_AGENT;
use crate::domain::{Engine, MessageKind, MessageRole};
use crate::store::{Conversation, NewMessage, NewRun, RunStart, EVENT_ID_BLOCK};
use crate::telemetry::spans::AgentAttrs;
use crate::telemetry::{Context, RunTrace};

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
    pub(super) async fn start_timed(
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
        // A query may be its images alone ("what is this?" is often left unsaid).
        match request.images.is_empty() {
            true => check_text("query", &request.query, self.max_query_chars)?,
            false => check_at_most("query", &request.query, self.max_query_chars)?,
        }
        // Taken, not copied: a `data:` URL is megabytes, and the run keeps it as it came.
        let images = check_images(std::mem::take(&mut request.images))?;
        check_allowance(&images, self.max_run_image_bytes)?;
        self.check_history(&request)?;
        if request.max_iterations == Some(0) {
            return Err(RunError::Invalid(
                "max_iterations must be at least 1".into(),
            ));
        }
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
        if self.shutdown.is_cancelled() {
            return Err(RunError::ShuttingDown);
        }
        self.admit(owner).await?;
        let run_id = request.id.unwrap_or_else(Uuid::new_v4);
        match self.active.entry(conv.id) {
            Entry::Occupied(_) => return Err(RunError::Active),
            Entry::Vacant(v) => {
                v.insert(run_id);
            }
        }
        // Checked after taking the slot: a delete marks first and then looks at the slot, so
        // either this start sees the mark or the delete sees (and stops) this run.
        if self.deleting.contains_key(&conv.id) {
            self.active.remove(&conv.id);
            return Err(RunError::NotFound);
        }
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

    /// Supplied history seeds new conversations only, and each turn obeys the query's rules.
    pub(super) fn check_history(&self, request: &StartRun) -> Result<(), RunError> {
        if request.history.is_empty() {
            return Ok(());
        }
        if matches!(request.conversation, ConversationRef::Existing(_)) {
            return Err(RunError::Invalid(
                "a history can only be given with a new conversation".into(),
            ));
        }
        for turn in &request.history {
            check_at_most("history", &turn.content, self.max_query_chars)?;
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
    pub(super) fn live_run_of(
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
    pub(super) fn spawn_run(
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

    /// The run's agent and input; the run and its query (with its images) are stored, with
    /// the conversation when it is new. A history's images are taken from `req`.
    async fn prepare(
        &self,
        req: &mut StartRun,
        s: &mut Starting<'_>,
    ) -> Result<Prepared, RunError> {
        let conv = &s.conv;
        let asked = req.model.as_deref().or(conv.model.as_deref());
        let mut bound = self
            .bind(conv, asked, req.max_iterations, s.ledger.clone())
            .await?;
        if let Some(context) = &req.context {
            bound.system_prompt = Some(with_context(bound.system_prompt.as_deref(), context));
        }
        let has_images = !s.images.is_empty() || req.history.iter().any(|t| !t.images.is_empty());
        if has_images && !bound.llm.abilities().vision {
            return Err(RunError::ModelWithoutVision(bound.model.clone()));
        }
        check_caller_tools(&req.client_tools, &bound.tools.names())?;
        let engine = run_engine(req, conv, bound.engine, self.dag.default_engine)?;
        let agent = self.react_agent(&bound, req.mode);
        let model = bound.model.clone();
        let agent_name = conv.agent.as_deref().unwrap_or(IMPLICIT_AGENT);
        let trace = RunTrace::start(
            &s.parent,
            &AgentAttrs {
                agent: agent_name,
                run_id: &s.run_id.to_string(),
                conversation_id: &conv.id.to_string(),
                tenant: s.owner,
                model: &model,
            },
        );
        // What the query's images leave of the run's allowance goes to the history's, newest
        // first.
        let allowance = self
            .max_run_image_bytes
            .saturating_sub(image_bytes(&s.images));
        let seed = match s.is_new {
            true => {
                let mut seed = seed(std::mem::take(&mut req.history), conv.id)?;
                load_images(&self.store, s.owner, &mut seed.history, allowance).await?;
                seed
            }
            false => {
                let mut history = self.history(conv.id, &req.replaces).await?;
                history.extend(self.unanswered_turn(conv.id).await?);
                if !bound.llm.abilities().vision {
                    // A model without vision gets a history's images as their text.
                    history.iter_mut().for_each(|m| {
                        m.images_to_text();
                    });
                }
                load_images(&self.store, s.owner, &mut history, allowance).await?;
                Seed {
                    history,
                    ..Seed::default()
                }
            }
        };
        // Refused before anything is stored when the budget cannot take its first call: its
        // history and query so far, and all the model may write.
        let prompt = estimate_tokens(&seed.history, &[]) + req.query.len().div_ceil(4);
        let floor = self.call_floor(&bound.model, bound.llm.as_ref(), prompt as u64);
        self.admit_call(s.owner, floor).await?;
        let images = stage_images(std::mem::take(&mut s.images));
        let run = NewRun {
            id: s.run_id,
            conversation_id: conv.id,
            owner: s.owner.to_string(),
            mode: agent.mode(),
            model: model.clone(),
            traceparent: trace.traceparent(),
        };
        let query = NewMessage {
            id: None,
            conversation_id: conv.id,
            role: MessageRole::User,
            kind: MessageKind::Query,
            content: req.query.clone(),
            run_id: Some(s.run_id),
            images: images.stored,
        };
        let mut artifacts = seed.artifacts;
        artifacts.extend(images.artifacts);
        let started_at = self
            .store
            .start_run(RunStart {
                conversation: s.is_new.then_some(conv),
                history: seed.stored,
                run,
                query,
                artifacts,
                after_run: req.after_run,
                record: req.record.take(),
            })
            .await?;
        for id in &req.replaces {
            self.store.delete_message(conv.id, *id).await?;
        }
        let input = RunInput {
            run_id: s.run_id.to_string(),
            conversation_id: conv.id.to_string(),
            query: req.query.clone(),
            history: seed.history,
            model_name: Some(model),
            client_tools: req.client_tools.clone(),
            images: images.parts,
        };
        let dag = self.dag_setup(bound, req.mode);
        let labels = RunLabels {
            agent: agent_name.to_string(),
            trace,
        };
        Ok(Prepared {
            engine: RunEngine::new(engine, agent, dag),
            input,
            labels,
            started_at,
        })
    }
}

/// What a start carries from its checks through [`RunManager::prepare`] to
/// [`RunManager::launch`]: whose run, where, and what travels with it.
struct Starting<'a> {
    owner: &'a str,
    conv: Conversation,
    run_id: Uuid,
    /// The conversation is new: stored with the run.
    is_new: bool,
    /// The caller's trace: the run's span is its child.
    parent: Context,
    /// The query's checked images (taken when the run is stored).
    images: Vec<QueryImage>,
    ledger: Arc<Ledger>,
}

/// A prepared run: what drives it and what it is given.
struct Prepared {
    engine: RunEngine,
    input: RunInput,
    labels: RunLabels,
    /// The run's `started_at` as stored (µs).
    started_at: i64,
}

/// The engine a run uses: the request's, else the conversation's, else the agent's, else the
/// default; caller tools need ReAct (a plan's steps cannot wait for the caller).
fn run_engine(
    req: &StartRun,
    conv: &Conversation,
    bound: Option<Engine>,
    default: Engine,
) -> Result<Engine, RunError> {
    match (
        req.engine.or(conv.engine).or(bound),
        req.client_tools.is_empty(),
    ) {
        (e, true) => Ok(e.unwrap_or(default)),
        // 409, not 400: each field is valid alone, only the pair conflicts.
        (Some(Engine::Dag), false) => Err(RunError::Conflict(
            "client_tools are not supported by the dag engine: use engine react".into(),
        )),
        (_, false) => Ok(Engine::React),
    }
}

/// The system prompt's role (the configured one, else the default) with `context` appended as
/// its own section.
fn with_context(role: Option<&str>, context: &str) -> String {
    let role = role.unwrap_or(crate::agent::prompts::DEFAULT_ROLE);
    format!("{role}\n\n{context}")
}
