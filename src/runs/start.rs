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
use super::continuation::check_client_tools;
use super::engines::RunEngine;
use super::follow_up::FollowUps;
use super::images::{check_images, store_images, QueryImage};
use super::ledger::Ledger;
use super::log::EventLog;
use super::manager::{LiveRun, RunError, RunLabels, RunManager};
use crate::agent::checkpoint::Resume;
use crate::agent::{InterruptQueue, Mode, RunInput};
use crate::config::IMPLICIT_AGENT;
use crate::domain::{Engine, MessageKind, MessageRole};
use crate::llm::{Message, ToolDefinition};
use crate::store::{Conversation, NewConversation, NewMessage, NewRun, EVENT_ID_BLOCK};
use crate::telemetry::spans::AgentAttrs;
use crate::telemetry::{Context, RunTrace};

/// Which conversation a run belongs to.
#[derive(Clone, Debug)]
pub enum ConversationRef {
    /// A stored conversation of the caller's.
    Existing(Uuid),
    /// A new conversation, checked like `POST /api/conversations` and stored with its first
    /// run in one transaction: nothing is stored if the start fails.
    New(NewConversation),
}

impl ConversationRef {
    /// A new conversation titled after the query's first 80 characters (`POST /api/chat`).
    pub fn titled_after(query: &str, model: Option<String>) -> Self {
        Self::New(NewConversation {
            title: Some(query.trim().chars().take(80).collect()),
            model,
            ..NewConversation::default()
        })
    }
}

/// An earlier turn a client brings along with a new conversation.
#[derive(Clone, Debug, PartialEq)]
pub struct PriorTurn {
    pub role: MessageRole,
    pub content: String,
}

/// What a client asked for.
#[derive(Clone, Debug)]
pub struct StartRun {
    pub conversation: ConversationRef,
    pub query: String,
    /// A configured model name; the conversation's model, else the default, when absent.
    pub model: Option<String>,
    /// A forced mode; the engine decides when absent.
    pub mode: Option<Mode>,
    pub max_iterations: Option<u32>,
    /// The engine; the conversation's, else `REAGENT_DEFAULT_ENGINE`, when absent.
    pub engine: Option<Engine>,
    /// The run's id, when it was announced before the run started (a `done.next_run_id`).
    pub id: Option<Uuid>,
    /// Stored follow-ups this run's query is made of: they leave the history it reads, and the
    /// conversation, once its query is stored.
    pub replaces: Vec<Uuid>,
    /// Turns before the query (oldest first) a new conversation is seeded with: stored with
    /// it, and the history the run reads. Only with [`ConversationRef::New`].
    pub history: Vec<PriorTurn>,
    /// The agent the caller expects an existing conversation to run (`/v1`'s `model`): a
    /// conversation of another agent is refused with [`RunError::AgentMismatch`] rather than
    /// run under a name that is not what ran.
    pub agent: Option<String>,
    /// Tools the caller executes (docs/api.md "Caller tools"); any API passes them here.
    pub client_tools: Vec<ToolDefinition>,
    /// The id of the new conversation ([`ConversationRef::New`] only; fresh when absent): a
    /// front end's own thread id names it (docs/protocols.md).
    pub conversation_id: Option<Uuid>,
    /// The query's images as URLs (`data:` or `http(s)`, docs/api.md "Images").
    pub images: Vec<String>,
    /// A section appended to this run's system prompt (a front end's `context`), not stored
    /// with the conversation: later runs do not see it.
    pub context: Option<String>,
}

impl StartRun {
    /// A run of `query` in `conversation`, everything else as configured.
    pub fn new(conversation: ConversationRef, query: impl Into<String>) -> Self {
        Self {
            conversation,
            query: query.into(),
            model: None,
            mode: None,
            max_iterations: None,
            engine: None,
            id: None,
            replaces: Vec::new(),
            history: Vec::new(),
            agent: None,
            client_tools: Vec::new(),
            conversation_id: None,
            images: Vec::new(),
            context: None,
        }
    }
}

impl PriorTurn {
    fn message(&self) -> Message {
        match self.role {
            MessageRole::User => Message::user(self.content.clone()),
            MessageRole::Assistant => Message::assistant(self.content.clone()),
        }
    }

    fn stored(&self, conversation_id: Uuid) -> NewMessage {
        NewMessage {
            id: None,
            conversation_id,
            role: self.role,
            kind: match self.role {
                MessageRole::User => MessageKind::Query,
                MessageRole::Assistant => MessageKind::Answer,
            },
            content: self.content.clone(),
            run_id: None,
        }
    }
}

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
        request: StartRun,
        parent: Context,
    ) -> Result<Arc<LiveRun>, RunError> {
        check_text("query", &request.query, self.max_query_chars)?;
        let images = check_images(&request.images)?;
        self.check_history(&request)?;
        if request.max_iterations == Some(0) {
            return Err(RunError::Invalid(
                "max_iterations must be at least 1".into(),
            ));
        }
        let (conv, is_new) = match &request.conversation {
            ConversationRef::Existing(id) => (self.owned(owner, *id).await?, false),
            ConversationRef::New(new) => {
                let mut conv = self.draft_conversation(owner, new.clone())?;
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
        let prepared = self
            .prepare(
                owner,
                &conv,
                &request,
                run_id,
                is_new,
                &parent,
                images,
                ledger.clone(),
            )
            .await;
        match prepared {
            Ok((agent, input, labels)) => {
                let live = self.launch(owner, &conv, run_id, agent, input, labels, ledger);
                tracing::info!(run_id = %live.id, conversation_id = %conv.id, "run started");
                Ok(live)
            }
            Err(e) => {
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

    /// `owner`'s conversation, or `NotFound`.
    pub async fn owned(&self, owner: &str, id: Uuid) -> Result<Conversation, RunError> {
        self.store
            .get_conversation(owner, id)
            .await?
            .ok_or(RunError::NotFound)
    }

    /// The run's live state and its task (the run's slot is already taken).
    #[allow(clippy::too_many_arguments)] // the run and what carries it; see prepare
    fn launch(
        self: &Arc<Self>,
        owner: &str,
        conv: &Conversation,
        run_id: Uuid,
        agent: RunEngine,
        input: RunInput,
        labels: RunLabels,
        ledger: Arc<Ledger>,
    ) -> Arc<LiveRun> {
        let queue = Arc::new(InterruptQueue::new());
        // The run's row was committed with its first block of ids reserved.
        let log = EventLog::with_ceiling(EVENT_ID_BLOCK as u64);
        // Created with its lease at epoch 1 (see `Store::hold_leases_as`).
        let live = self.live_run_of(owner, conv.id, run_id, 1, log, ledger);
        self.spawn_run(live.clone(), agent, input, queue, None, labels);
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

    /// The run's agent and input; the run and its query are stored (with the conversation
    /// when it is new).
    // Eight inputs, each used once; a struct for them would only be this list again.
    #[allow(clippy::too_many_arguments)]
    async fn prepare(
        &self,
        owner: &str,
        conv: &Conversation,
        req: &StartRun,
        run_id: Uuid,
        is_new: bool,
        parent: &Context,
        images: Vec<QueryImage>,
        ledger: Arc<Ledger>,
    ) -> Result<(RunEngine, RunInput, RunLabels), RunError> {
        let asked = req.model.as_deref().or(conv.model.as_deref());
        let mut bound = self.bind(conv, asked, req.max_iterations, ledger)?;
        if let Some(context) = &req.context {
            bound.system_prompt = Some(with_context(bound.system_prompt.as_deref(), context));
        }
        if !images.is_empty() && !bound.llm.abilities().vision {
            return Err(RunError::ModelWithoutVision(bound.model.clone()));
        }
        check_client_tools(&req.client_tools, &bound.tools.names())?;
        let engine = match (
            req.engine.or(conv.engine).or(bound.engine),
            req.client_tools.is_empty(),
        ) {
            (e, true) => e.unwrap_or(self.dag.default_engine),
            (Some(Engine::Dag), false) => {
                // 409, not 400: each field is valid alone, only the pair conflicts.
                return Err(RunError::Conflict(
                    "client_tools are not supported by the dag engine: use engine react".into(),
                ));
            }
            // A plan's steps cannot wait for the caller: `auto` (or a DAG default) runs ReAct.
            (_, false) => Engine::React,
        };
        let agent = self.react_agent(&bound, req.mode);
        let model = bound.model.clone();
        let agent_name = conv.agent.as_deref().unwrap_or(IMPLICIT_AGENT);
        let trace = RunTrace::start(
            parent,
            &AgentAttrs {
                agent: agent_name,
                run_id: &run_id.to_string(),
                conversation_id: &conv.id.to_string(),
                tenant: owner,
                model: &model,
            },
        );
        let history = if is_new {
            req.history.iter().map(PriorTurn::message).collect()
        } else {
            let mut history = self.history(conv.id, &req.replaces).await?;
            history.extend(self.unanswered_turn(conv.id).await?);
            history
        };
        let run = NewRun {
            id: run_id,
            conversation_id: conv.id,
            owner: owner.to_string(),
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
            run_id: Some(run_id),
        };
        if is_new {
            let seed = req.history.iter().map(|t| t.stored(conv.id)).collect();
            self.store
                .create_conversation_with_history(conv, seed, run, query)
                .await?;
        } else {
            self.store.create_run_with_query(run, query).await?;
        }
        for id in &req.replaces {
            self.store.delete_message(conv.id, *id).await?;
        }
        let images = store_images(&self.store, run_id, images).await?;
        let input = RunInput {
            run_id: run_id.to_string(),
            conversation_id: conv.id.to_string(),
            query: req.query.clone(),
            history,
            model_name: Some(model),
            client_tools: req.client_tools.clone(),
            images,
        };
        let dag = self.dag_setup(bound, req.mode);
        let labels = RunLabels {
            agent: agent_name.to_string(),
            trace,
        };
        Ok((RunEngine::new(engine, agent, dag), input, labels))
    }

    /// Supplied history seeds new conversations only, and each turn obeys the query's rules.
    fn check_history(&self, request: &StartRun) -> Result<(), RunError> {
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

    /// The conversation's earlier turns as the model reads them.
    async fn history(
        &self,
        conversation_id: Uuid,
        leave_out: &[Uuid],
    ) -> Result<Vec<Message>, RunError> {
        let stored = self.store.list_messages(conversation_id).await?;
        Ok(stored
            .into_iter()
            .filter(|m| !leave_out.contains(&m.id))
            .map(|m| match (m.role, m.kind) {
                (MessageRole::Assistant, _) => {
                    Message::assistant(m.content).with_continuity(m.continuity)
                }
                (_, MessageKind::Interrupt) => Message::user(format!("(follow-up) {}", m.content)),
                _ => Message::user(m.content),
            })
            .collect())
    }
}

/// The system prompt's role (the configured one, else the default) with `context` appended as
/// its own section.
fn with_context(role: Option<&str>, context: &str) -> String {
    let role = role.unwrap_or(crate::agent::prompts::DEFAULT_ROLE);
    format!("{role}\n\n{context}")
}
