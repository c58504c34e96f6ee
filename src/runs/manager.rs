//! [`RunManager`]: starts runs (at most one active per conversation), gives the agent a sink
//! that appends its events to the run's [`EventLog`] (ids assigned there) from the emitting
//! task, has the shared [`EventWriter`] persist them in batches off the token path, accepts
//! interrupts and cancels, and recovers runs a crash left `running`.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use dashmap::mapref::entry::Entry;
use dashmap::DashMap;
use futures::stream::{self, BoxStream, StreamExt};
use futures::FutureExt;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::Instrument;
use uuid::Uuid;

use super::log::{EventLog, LoggedEvent};
use super::persist::EventWriter;
use super::replay::stored_events;
use crate::agent::artifacts::ArtifactSink;
use crate::agent::events::{AgentEvent, AnswerEvent, DoneEvent, EventSink, RunStatus, StartEvent};
use crate::agent::hooks::HookRunner;
use crate::agent::interrupts::Recall;
use crate::agent::{AgentConfig, InterruptQueue, Mode, ReActAgent, RunHandles, RunInput};
use crate::llm::registry::ModelRegistry;
use crate::llm::{Llm, Message, Usage};
use crate::store::{
    Conversation, FinalState, NewMessage, NewRun, RunBatch, RunFinish, Store, StoreError,
    StoredEvent,
};
use crate::tools::ToolRegistry;

/// The error text of runs found `running` at start-up.
pub const RESTART_ERROR: &str = "interrupted by server restart";

/// A run in progress.
pub struct LiveRun {
    pub id: Uuid,
    pub conversation_id: Uuid,
    pub owner: String,
    pub log: Arc<EventLog>,
    pub cancel: CancellationToken,
    /// Fired once the run's final state and every event are written (see [`LiveRun::finished`]).
    done: CancellationToken,
}

impl LiveRun {
    /// Resolves when the run is over and fully persisted: its rows may then be deleted.
    pub async fn finished(&self) {
        self.done.cancelled().await
    }
}

/// What a client asked for.
#[derive(Clone, Debug, Default)]
pub struct StartRun {
    pub query: String,
    pub model: Option<String>,
    pub mode: Option<Mode>,
    pub max_iterations: Option<u32>,
}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("the conversation already has an active run")]
    Active,
    #[error("no active run for this conversation")]
    NoActiveRun,
    #[error("not found")]
    NotFound,
    #[error("the run has already finished")]
    Finished,
    #[error("the interrupt was already delivered to the agent")]
    NotPending,
    #[error("unknown model '{0}'")]
    UnknownModel(String),
    #[error("server is shutting down")]
    ShuttingDown,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Owns every running agent.
pub struct RunManager {
    store: Store,
    models: ModelRegistry,
    tools: ToolRegistry,
    hooks: HookRunner,
    base: AgentConfig,
    compact_llm: Option<Arc<dyn Llm>>,
    live: DashMap<Uuid, Arc<LiveRun>>,
    /// conversation → its active run.
    active: DashMap<Uuid, Uuid>,
    queues: DashMap<Uuid, Arc<InterruptQueue>>,
    tracker: TaskTracker,
    shutdown: CancellationToken,
    /// Shortest time between two writes of the shared event writer, i.e. about the longest an
    /// event waits before it is written to the database (plus the write itself). Read when the
    /// first run starts.
    pub flush_interval: Duration,
    /// The one writer of every run's events, started with the first run.
    writer: OnceLock<Arc<EventWriter>>,
    writer_task: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// Called with every event of every run, in the task that emits it, before the event is
    /// logged (the app's metrics count tool calls and outcomes this way).
    pub observer: Option<EventObserver>,
}

/// The shared event writer's default interval. Each commit dirties about one page of the
/// `(run, seq)` index per live run, whatever the number of events it carries, so longer
/// intervals cost fewer page writes: at 1000 streams × 20 tokens/s, 100 ms instead of 20 ms
/// took 10 % off the server's CPU and 12 KiB off its memory per run (BENCHMARKS.md). The price:
/// a crash can lose up to this much of the streamed events (RELIABILITY.md). A run's end does
/// not wait for it (its final write starts at once).
pub const DEFAULT_FLUSH_INTERVAL: Duration = Duration::from_millis(100);

/// Sees each event of each run as it is emitted; must be cheap (it runs on the run's task).
pub type EventObserver = Arc<dyn Fn(&AgentEvent) + Send + Sync>;

impl RunManager {
    pub fn new(
        store: Store,
        models: ModelRegistry,
        tools: ToolRegistry,
        hooks: HookRunner,
        base: AgentConfig,
        compact_llm: Option<Arc<dyn Llm>>,
    ) -> Self {
        Self {
            store,
            models,
            tools,
            hooks,
            base,
            compact_llm,
            live: DashMap::new(),
            active: DashMap::new(),
            queues: DashMap::new(),
            tracker: TaskTracker::new(),
            shutdown: CancellationToken::new(),
            flush_interval: DEFAULT_FLUSH_INTERVAL,
            writer: OnceLock::new(),
            writer_task: Mutex::new(None),
            observer: None,
        }
    }

    /// The shared event writer, started on first use.
    fn writer(&self) -> Arc<EventWriter> {
        self.writer
            .get_or_init(|| {
                let w = EventWriter::new(self.store.clone(), self.flush_interval);
                let task = tokio::spawn(w.clone().run());
                *self.writer_task.lock().unwrap_or_else(|p| p.into_inner()) = Some(task);
                w
            })
            .clone()
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    pub fn models(&self) -> &ModelRegistry {
        &self.models
    }

    pub fn tools(&self) -> &ToolRegistry {
        &self.tools
    }

    /// Runs that have not emitted `done` yet.
    pub fn active_runs(&self) -> usize {
        self.active.len()
    }

    pub fn active_run_of(&self, conversation_id: Uuid) -> Option<Uuid> {
        self.active.get(&conversation_id).map(|r| *r)
    }

    /// Starts a run; 409-style `Active` if the conversation already has one.
    pub async fn start(
        self: &Arc<Self>,
        owner: &str,
        conv: &Conversation,
        req: StartRun,
    ) -> Result<Arc<LiveRun>, RunError> {
        self.start_run(owner, conv, req, false).await
    }

    /// Starts the first run of a conversation that is not stored yet (`conv` from
    /// [`Store::draft_conversation`]): the conversation, the run and its query are written in
    /// one transaction, and there is no history to read. Nothing is stored if the start fails.
    pub async fn start_in_new(
        self: &Arc<Self>,
        owner: &str,
        conv: &Conversation,
        req: StartRun,
    ) -> Result<Arc<LiveRun>, RunError> {
        self.start_run(owner, conv, req, true).await
    }

    async fn start_run(
        self: &Arc<Self>,
        owner: &str,
        conv: &Conversation,
        req: StartRun,
        new_conversation: bool,
    ) -> Result<Arc<LiveRun>, RunError> {
        if self.shutdown.is_cancelled() {
            return Err(RunError::ShuttingDown);
        }
        let run_id = Uuid::new_v4();
        match self.active.entry(conv.id) {
            Entry::Occupied(_) => return Err(RunError::Active),
            Entry::Vacant(v) => {
                v.insert(run_id);
            }
        }
        match self
            .prepare(owner, conv, &req, run_id, new_conversation)
            .await
        {
            Ok((agent, input)) => {
                let queue = Arc::new(InterruptQueue::new());
                self.queues.insert(conv.id, queue.clone());
                let live = Arc::new(LiveRun {
                    id: run_id,
                    conversation_id: conv.id,
                    owner: owner.to_string(),
                    log: Arc::new(EventLog::new()),
                    cancel: self.shutdown.child_token(),
                    done: CancellationToken::new(),
                });
                self.live.insert(run_id, live.clone());
                let me = self.clone();
                let l = live.clone();
                // Every log line of the run carries its ids.
                let span = tracing::info_span!("run", run_id = %run_id, conversation_id = %conv.id);
                self.tracker
                    .spawn(async move { me.drive(l, agent, input, queue).await }.instrument(span));
                Ok(live)
            }
            Err(e) => {
                self.active.remove(&conv.id);
                Err(e)
            }
        }
    }

    async fn prepare(
        &self,
        owner: &str,
        conv: &Conversation,
        req: &StartRun,
        run_id: Uuid,
        new_conversation: bool,
    ) -> Result<(ReActAgent, RunInput), RunError> {
        let model_name = req
            .model
            .clone()
            .or_else(|| conv.model.clone())
            .unwrap_or_else(|| self.models.default_name().to_string());
        let llm = self
            .models
            .get(&model_name)
            .ok_or_else(|| RunError::UnknownModel(model_name.clone()))?;
        let tools = match &conv.tools {
            Some(names) => self.tools.filtered(names),
            None => self.tools.clone(),
        };
        let mut cfg = self.base.clone();
        if req.mode.is_some() {
            cfg.mode = req.mode;
        }
        if let Some(m) = req.max_iterations {
            cfg.max_iterations = m;
        }
        if conv.system_prompt.is_some() {
            cfg.system_prompt = conv.system_prompt.clone();
        }
        let mut agent = ReActAgent::new(llm.clone(), tools, self.hooks.clone(), cfg);
        if let Some(c) = &self.compact_llm {
            agent = agent.with_compact_llm(c.clone());
        }
        let stored = if new_conversation {
            Vec::new()
        } else {
            self.store.list_messages(conv.id).await?
        };
        let history = stored
            .into_iter()
            .map(|m| match (m.role.as_str(), m.kind.as_str()) {
                ("assistant", _) => Message::assistant(m.content),
                (_, "interrupt") => Message::user(format!("(follow-up) {}", m.content)),
                _ => Message::user(m.content),
            })
            .collect();
        let run = NewRun {
            id: run_id,
            conversation_id: conv.id,
            owner: owner.to_string(),
            mode: agent.mode().as_str().to_string(),
            model: model_name.clone(),
        };
        let query = NewMessage {
            id: None,
            conversation_id: conv.id,
            role: "user".into(),
            kind: "query".into(),
            content: req.query.clone(),
            run_id: Some(run_id),
        };
        if new_conversation {
            self.store
                .create_conversation_with_run(conv, run, query)
                .await?;
        } else {
            self.store.create_run_with_query(run, query).await?;
        }
        let input = RunInput {
            run_id: run_id.to_string(),
            conversation_id: conv.id.to_string(),
            query: req.query.clone(),
            history,
            model_name: Some(model_name),
        };
        Ok((agent, input))
    }

    /// Runs the agent, persists, and cleans up. The agent's events go straight into the run's
    /// log from the task that emits them (see [`EventSink`]); `done` is held back: it is
    /// persisted with the run's final state first, then appended and the log closed.
    async fn drive(
        self: Arc<Self>,
        live: Arc<LiveRun>,
        agent: ReActAgent,
        input: RunInput,
        queue: Arc<InterruptQueue>,
    ) {
        let writer = self.writer();
        writer.register(live.id, live.log.clone());
        // Only the first `done` is kept, and nothing after it: the log is sealed right away.
        let (done_tx, done_rx) = oneshot::channel::<(DoneEvent, String, u64)>();
        let done_tx = Mutex::new(Some(done_tx));
        let sink = {
            let log = live.log.clone();
            let writer = writer.clone();
            let observer = self.observer.clone();
            // The observer sees exactly what the log takes: not a second `done`, nothing after it.
            let observe = move |ev: &AgentEvent| {
                if let Some(observe) = &observer {
                    observe(ev);
                }
            };
            EventSink::new(move |ev: AgentEvent| {
                let data = ev.data_json();
                if !matches!(ev, AgentEvent::Done(_)) {
                    if log.append(ev.name(), data) {
                        writer.notify();
                        observe(&ev);
                    }
                    return;
                }
                let Some(seq) = log.seal() else { return };
                observe(&ev);
                if let AgentEvent::Done(d) = ev {
                    let tx = done_tx.lock().unwrap_or_else(|p| p.into_inner()).take();
                    if let Some(tx) = tx {
                        let _ = tx.send((d, data, seq));
                    }
                }
            })
        };
        let handles = RunHandles {
            events: sink.clone(),
            interrupts: queue,
            cancel: live.cancel.clone(),
            artifacts: Arc::new(self.store.clone()) as Arc<dyn ArtifactSink>,
        };
        // In this task (one task per run); a panic inside the engine must still end the stream
        // truthfully.
        let ran = std::panic::AssertUnwindSafe(agent.run(input, handles))
            .catch_unwind()
            .await;
        if let Err(panic) = ran {
            let msg = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            tracing::error!(panic = %msg, "the agent panicked");
            let text = "Sorry, the run failed because of an internal error.".to_string();
            for ev in [
                AgentEvent::Answer(AnswerEvent::Start),
                AgentEvent::Answer(AnswerEvent::Delta {
                    content: text.clone(),
                }),
                AgentEvent::Answer(AnswerEvent::Done {
                    content: text.clone(),
                    fallback: true,
                }),
                AgentEvent::Done(DoneEvent {
                    status: RunStatus::Failed,
                    iterations: 0,
                    tool_calls: 0,
                    usage: Usage::default(),
                    elapsed_ms: 0,
                    mode: Mode::Json,
                    answer: text.clone(),
                    error: Some("internal error".into()),
                    unprocessed_interrupts: vec![],
                }),
            ] {
                sink.send(ev);
            }
        }
        drop(sink);
        match done_rx.await {
            Ok((d, data, seq)) => {
                self.finish(&writer, &live, &d, &data, seq).await;
                live.log.close_with("done", data);
            }
            Err(_) => {
                // Cannot happen (a `done` is always sent above); still flush what there is.
                live.log.close();
                if let Err(e) = writer.finish(live.id, None).await {
                    tracing::error!(error = %e, "could not persist the run's last events");
                }
                self.queues.remove(&live.conversation_id);
                self.active.remove(&live.conversation_id);
            }
        }
        self.live.remove(&live.id);
        live.done.cancel();
    }

    /// Persists the run's remaining events, `done`, the terminal state and the answer in one
    /// transaction (through the shared writer) before `done` becomes visible, so a client that
    /// reads `done` and asks for the run (or starts another, or replays the events from the
    /// database) sees it finished and complete.
    async fn finish(
        &self,
        writer: &EventWriter,
        live: &LiveRun,
        d: &DoneEvent,
        data: &str,
        seq: u64,
    ) {
        let answer = (!d.answer.is_empty()).then(|| NewMessage {
            id: None,
            conversation_id: live.conversation_id,
            role: "assistant".into(),
            kind: "answer".into(),
            content: d.answer.clone(),
            run_id: Some(live.id),
        });
        let state = FinalState {
            finish: RunFinish {
                status: d.status,
                iterations: d.iterations,
                tool_calls: d.tool_calls,
                usage: d.usage,
                error: d.error.clone(),
            },
            answer,
        };
        let done = StoredEvent {
            seq: seq as i64,
            name: "done".to_string(),
            data: data.to_string(),
        };
        match writer.finish(live.id, Some((done, state))).await {
            Ok(true) => {}
            Ok(false) => {
                tracing::warn!(run_id = %live.id, "the run was already finished in the database")
            }
            Err(e) => {
                tracing::error!(run_id = %live.id, error = %e, "could not store the run's final state")
            }
        }
        self.queues.remove(&live.conversation_id);
        self.active.remove(&live.conversation_id);
    }

    /// Cancels a run of this owner. `Finished` when it is no longer running.
    pub async fn cancel(&self, owner: &str, run_id: Uuid) -> Result<(), RunError> {
        if let Some(live) = self.live.get(&run_id).map(|l| l.clone()) {
            if live.owner != owner {
                return Err(RunError::NotFound);
            }
            if live.log.is_closed() {
                return Err(RunError::Finished);
            }
            live.cancel.cancel();
            return Ok(());
        }
        match self.store.get_run(owner, run_id).await? {
            Some(_) => Err(RunError::Finished),
            None => Err(RunError::NotFound),
        }
    }

    /// Queues an interrupt for the conversation's active run; persisted before it is accepted.
    pub async fn interrupt(
        &self,
        conversation_id: Uuid,
        content: String,
    ) -> Result<(Uuid, Uuid), RunError> {
        let (Some(queue), Some(run_id)) = (
            self.queues.get(&conversation_id).map(|q| q.clone()),
            self.active_run_of(conversation_id),
        ) else {
            return Err(RunError::NoActiveRun);
        };
        if !queue.is_open() {
            return Err(RunError::NoActiveRun);
        }
        let id = Uuid::new_v4();
        self.store
            .add_message(NewMessage {
                id: Some(id),
                conversation_id,
                role: "user".into(),
                kind: "interrupt".into(),
                content: content.clone(),
                run_id: Some(run_id),
            })
            .await?;
        if queue.push_with_id(id, content).is_err() {
            // The loop ended meanwhile: not accepted, so not kept.
            self.store.delete_message(conversation_id, id).await?;
            return Err(RunError::NoActiveRun);
        }
        Ok((id, run_id))
    }

    /// Recalls a pending interrupt.
    pub async fn recall(&self, conversation_id: Uuid, interrupt_id: Uuid) -> Result<(), RunError> {
        let queue = self.queues.get(&conversation_id).map(|q| q.clone());
        match queue.map(|q| q.recall(interrupt_id)) {
            Some(Recall::Recalled) => {
                self.store
                    .delete_message(conversation_id, interrupt_id)
                    .await?;
                Ok(())
            }
            // Accepted once (it is stored): already drained. Never accepted: unknown.
            _ if self
                .store
                .has_message(conversation_id, interrupt_id)
                .await? =>
            {
                Err(RunError::NotPending)
            }
            _ => Err(RunError::NotFound),
        }
    }

    /// The run's events after `after`: live ones follow until `done`, finished ones replay
    /// from the database.
    pub async fn events(
        &self,
        owner: &str,
        run_id: Uuid,
        after: u64,
    ) -> Result<BoxStream<'static, Arc<LoggedEvent>>, RunError> {
        if let Some(live) = self.live.get(&run_id).map(|l| l.clone()) {
            if live.owner != owner {
                return Err(RunError::NotFound);
            }
            return Ok(self.live_events(&live, after));
        }
        if self.store.get_run(owner, run_id).await?.is_none() {
            return Err(RunError::NotFound);
        }
        Ok(stored_events(self.store.clone(), run_id, after, u64::MAX))
    }

    /// A live run's events after `after`, following until `done`. Events the log has already
    /// released (persisted, and read by every reader then) come from the database first; if
    /// that read fails the stream ends there (a client resumes with `Last-Event-ID`) rather
    /// than skip ids.
    pub fn live_events(&self, live: &LiveRun, after: u64) -> BoxStream<'static, Arc<LoggedEvent>> {
        let sub = live.log.subscribe(after);
        let Some((from, to)) = sub.missing else {
            return sub.events;
        };
        // The stored part ends early only when a read fails: then nothing live may follow it,
        // or ids would be skipped.
        let older = stored_events(self.store.clone(), live.id, from, to);
        let complete = Arc::new(std::sync::atomic::AtomicU64::new(from));
        let seen = complete.clone();
        let older = older.inspect(move |e| seen.store(e.id, std::sync::atomic::Ordering::Relaxed));
        let rest = stream::once(async move {
            if complete.load(std::sync::atomic::Ordering::Relaxed) >= to {
                sub.events
            } else {
                stream::empty().boxed()
            }
        })
        .flatten();
        older.chain(rest).boxed()
    }

    /// The live run's log, if this owner's run is running.
    pub fn live_run(&self, owner: &str, run_id: Uuid) -> Option<Arc<LiveRun>> {
        self.live
            .get(&run_id)
            .map(|l| l.clone())
            .filter(|l| l.owner == owner)
    }

    /// Cancels the conversation's run (before deleting it).
    pub fn cancel_conversation(&self, conversation_id: Uuid) {
        if let Some(run_id) = self.active_run_of(conversation_id) {
            if let Some(live) = self.live.get(&run_id) {
                live.cancel.cancel();
            }
        }
    }

    /// Marks runs left `running` by a previous process as failed, closing their event logs
    /// with an answer and `done` so replays end truthfully.
    pub async fn recover(&self) -> Result<usize, RunError> {
        let stale = self.store.running_runs().await?;
        for run in &stale {
            let events = self.store.list_events(run.id, 0).await?;
            let mut seq = events.last().map(|e| e.seq).unwrap_or(0);
            let answer_started = events.iter().any(|e| e.name == "answer");
            let text = format!("Sorry, this run was {RESTART_ERROR} before it finished.");
            let mode = if run.mode == "native" {
                Mode::Native
            } else {
                Mode::Json
            };
            let mut tail: Vec<AgentEvent> = Vec::new();
            if events.is_empty() {
                // Killed before its first write: the replay must still begin with `start`.
                tail.push(AgentEvent::Start(StartEvent {
                    run_id: run.id.to_string(),
                    conversation_id: run.conversation_id.to_string(),
                    model: run.model.clone(),
                    mode,
                }));
            }
            if answer_started {
                tail.push(AgentEvent::Answer(AnswerEvent::Reset));
            } else {
                tail.push(AgentEvent::Answer(AnswerEvent::Start));
            }
            tail.push(AgentEvent::Answer(AnswerEvent::Delta {
                content: text.clone(),
            }));
            tail.push(AgentEvent::Answer(AnswerEvent::Done {
                content: text.clone(),
                fallback: true,
            }));
            tail.push(AgentEvent::Done(DoneEvent {
                status: RunStatus::Failed,
                iterations: run.iterations,
                tool_calls: run.tool_calls,
                usage: run.usage,
                elapsed_ms: 0,
                mode,
                answer: text.clone(),
                error: Some(RESTART_ERROR.into()),
                unprocessed_interrupts: vec![],
            }));
            let stored: Vec<StoredEvent> = tail
                .iter()
                .map(|e| {
                    seq += 1;
                    StoredEvent {
                        seq,
                        name: e.name().to_string(),
                        data: e.data_json(),
                    }
                })
                .collect();
            // Tail and terminal state in one transaction: a crash during recovery leaves the run
            // `running` with its log untouched, and the next start recovers it again.
            self.store
                .write_runs(&[RunBatch {
                    run_id: run.id,
                    events: stored,
                    finish: Some(FinalState {
                        finish: RunFinish {
                            status: RunStatus::Failed,
                            iterations: run.iterations,
                            tool_calls: run.tool_calls,
                            usage: run.usage,
                            error: Some(RESTART_ERROR.into()),
                        },
                        answer: None,
                    }),
                }])
                .await?;
        }
        Ok(stale.len())
    }

    /// Stops accepting runs, cancels the active ones and waits (up to `grace`) for their final
    /// state to be written.
    pub async fn shutdown(&self, grace: Duration) {
        self.shutdown.cancel();
        self.tracker.close();
        let deadline = tokio::time::Instant::now() + grace;
        if tokio::time::timeout_at(deadline, self.tracker.wait())
            .await
            .is_err()
        {
            tracing::warn!("runs did not finish within the shutdown grace period");
        }
        // Flush what the writer still holds (the events of runs that outlived the grace too).
        if let Some(w) = self.writer.get() {
            w.stop();
            let task = self
                .writer_task
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .take();
            if let Some(task) = task {
                let flush = deadline.max(tokio::time::Instant::now() + Duration::from_secs(2));
                if tokio::time::timeout_at(flush, task).await.is_err() {
                    tracing::warn!("the event writer did not finish flushing in time");
                }
            }
        }
    }
}
