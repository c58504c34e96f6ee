//! [`RunManager`] itself: what it owns (the live runs, the per-conversation slots and interrupt
//! queues, the run tasks, the shared event writer), its errors, and the shutdown that stops it.
//! What it does with a run is in the files named after the run's life: `start`, `drive`,
//! `control`, `read`, `recover`.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use dashmap::DashMap;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use uuid::Uuid;

use super::budget_types::Budgets;
use super::catalog::{Catalog, CatalogError};
use super::follow_up::FollowUps;
use super::lease_types::{LeaseStats, LeaseTimes};
use super::ledger::Ledger;
use super::log::EventLog;
use super::persist::EventWriter;
use super::progress::Progress;
use crate::agent::hooks::approval::ApprovalBroker;
use crate::agent::hooks::HookRunner;
use crate::agent::{AgentConfig, AgentEvent, InterruptQueue, ToolPool};
use crate::config::{AgentSpec, DagConfig, ServerConfig};
use crate::llm::registry::ModelRegistry;
use crate::llm::Llm;
use crate::store::notify::Notifier;
use crate::store::{Store, StoreError};
use crate::telemetry::RunTrace;
use crate::tools::ToolRegistry;

/// The error text of runs found `running` at start-up.
pub const RESTART_ERROR: &str = "interrupted by server restart";

/// The shared event writer's default interval. Each commit dirties about one page of the
/// `(run, seq)` index per live run whatever the number of events it carries, so a longer
/// interval costs fewer page writes (BENCHMARKS.md); the price is that a crash can lose up to
/// this much of the streamed events (RELIABILITY.md). A run's end does not wait for it.
pub const DEFAULT_FLUSH_INTERVAL: Duration = Duration::from_millis(100);

/// Sees each event of each run as it is emitted; must be cheap (it runs on the run's task).
pub type EventObserver = Arc<dyn Fn(&AgentEvent) + Send + Sync>;

/// A run in progress.
pub struct LiveRun {
    pub id: Uuid,
    pub conversation_id: Uuid,
    pub owner: String,
    /// The lease epoch this instance executes the run under (docs/deployment.md): its writes are
    /// conditional on it.
    pub epoch: i64,
    /// Cancelled when another instance took the run over: its task stops without writing.
    pub lost: CancellationToken,
    pub log: Arc<EventLog>,
    pub cancel: CancellationToken,
    /// Fired once the run's final state and every event are written (see [`LiveRun::finished`]).
    pub(super) done: CancellationToken,
    /// Its counters so far, from its events.
    pub progress: Arc<Progress>,
    /// Follow-ups that came after the loop closed: the next run's query.
    pub(super) follow_ups: FollowUps,
    /// The run's budget and usage accounting (every LLM call of the run goes through it).
    pub(super) ledger: Arc<Ledger>,
}

/// What the run's last log line and its trace say besides its outcome: the agent, and the
/// run's span (nothing while tracing is off).
pub(super) struct RunLabels {
    pub agent: String,
    pub trace: RunTrace,
}

impl std::fmt::Debug for LiveRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveRun")
            .field("id", &self.id)
            .field("conversation_id", &self.conversation_id)
            .field("owner", &self.owner)
            .finish_non_exhaustive()
    }
}

impl LiveRun {
    /// Resolves when the run is over and fully persisted: its rows may then be deleted.
    pub async fn finished(&self) {
        self.done.cancelled().await
    }
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
    /// Images for a model whose `abilities.vision` is false.
    #[error("the model '{0}' does not take images (abilities.vision is false)")]
    ModelWithoutVision(String),
    /// The request does not fit the run's state (the message says why).
    #[error("{0}")]
    Conflict(String),
    #[error("the interrupt was already delivered to the agent")]
    NotPending,
    /// The tenant's budget is used up (docs/api.md): retry after `retry_after` seconds.
    #[error("{message}")]
    BudgetExceeded { message: String, retry_after: u64 },
    /// `[server] max_active_runs_per_tenant` runs are going already.
    #[error("this tenant already has {0} active runs, the most allowed")]
    TooManyActiveRuns(u32),
    #[error("unknown model '{0}'")]
    UnknownModel(String),
    #[error("unknown agent '{0}'")]
    UnknownAgent(String),
    /// The caller named an agent the conversation does not run.
    #[error(
        "the conversation runs the agent '{conversation}', not '{requested}': ask for \
         '{conversation}', or start a new conversation to use '{requested}'"
    )]
    AgentMismatch {
        conversation: String,
        requested: String,
    },
    /// The request breaks a rule of docs/api.md (the message says which).
    #[error("{0}")]
    Invalid(String),
    #[error("server is shutting down")]
    ShuttingDown,
    /// The instance running the run did not answer in time (docs/deployment.md).
    #[error("{0}")]
    Unavailable(String),
    #[error("{0}")]
    Internal(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<CatalogError> for RunError {
    fn from(e: CatalogError) -> Self {
        match e {
            CatalogError::Invalid(m) => Self::Invalid(m),
            CatalogError::Conflict(m) => Self::Conflict(m),
            CatalogError::NotFound => Self::NotFound,
            CatalogError::Corrupt(m) => Self::Internal(m),
            CatalogError::Store(e) => Self::Store(e),
        }
    }
}

/// Owns every running agent.
pub struct RunManager {
    pub(super) store: Store,
    pub(super) models: ModelRegistry,
    /// Swapped when an MCP server's tool list changes; each run takes a snapshot.
    tools: std::sync::RwLock<ToolRegistry>,
    pub(super) hooks: HookRunner,
    pub(super) base: AgentConfig,
    pub(super) compact_llm: Option<Arc<dyn Llm>>,
    /// The configured agents (docs/protocols.md); the implicit one unless set.
    pub agents: Arc<[AgentSpec]>,
    /// Where runs and `/api/agents` find agents: these configured ones and each tenant's own.
    pub(super) catalog: Catalog,
    pub(super) live: DashMap<Uuid, Arc<LiveRun>>,
    /// conversation → its active run.
    pub(super) active: DashMap<Uuid, Uuid>,
    /// Conversations being deleted: no run may start in them.
    pub(super) deleting: DashMap<Uuid, ()>,
    pub(super) queues: DashMap<Uuid, Arc<InterruptQueue>>,
    pub(super) tracker: TaskTracker,
    /// Cancelled when the server stops: no run starts after it.
    pub(super) shutdown: CancellationToken,
    /// The parent of every run's cancel token: the runs themselves are cancelled at shutdown
    /// only when they will not be resumed.
    pub(super) runs_cancel: CancellationToken,
    /// Stops the runs still going at the end of the shutdown grace without ending them: left
    /// `running` with their checkpoint, the next start resumes them (docs/deployment.md).
    pub(super) handover: CancellationToken,
    /// Shortest time between two writes of the shared event writer, i.e. about the longest an
    /// event waits before it is written to the database (plus the write itself). Read when the
    /// first run starts.
    pub flush_interval: Duration,
    /// Longest query or interrupt, in characters (`server.max_query_chars`; its default
    /// unless set).
    pub max_query_chars: usize,
    /// Decoded image bytes a run may hold and send (`server.max_run_image_bytes`): more in a
    /// query is 400; a history's older images beyond it go as text.
    pub max_run_image_bytes: usize,
    /// `REAGENT_TRACE_URL`: `done.trace_url` is this with the run's trace id (tracing on).
    pub trace_url: Option<String>,
    /// The broker the approval hook waits on (the same one `hooks` was built with), so
    /// reviewers answer only their own runs' requests.
    pub approvals: Arc<ApprovalBroker>,
    /// The one writer of every run's events, started with the first run.
    pub(super) writer: OnceLock<Arc<EventWriter>>,
    writer_task: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// Called with every event of every run, in the task that emits it, before the event is
    /// logged (the app's metrics count runs, tool calls and outcomes this way).
    pub observer: Option<EventObserver>,
    /// The engine choice and DAG mode.
    pub dag: DagConfig,
    /// Budgets, prices and the per-tenant run cap (docs/configuration.md).
    pub budgets: Arc<Budgets>,
    /// Tool calls executing at once: each run gets its share of the process's slots.
    pub tool_pool: ToolPool,
    /// Runs a previous process left `running` go on from their checkpoint at start-up
    /// (`REAGENT_RESUME_ON_RESTART`); `false` fails them as before.
    pub resume_on_restart: bool,
    /// This process's name in `step {type:"resumed"}` (`REAGENT_INSTANCE_ID`).
    pub instance_id: String,
    /// `REAGENT_LEASE_TTL_S` / `REAGENT_LEASE_RENEW_S` (docs/deployment.md).
    pub lease: LeaseTimes,
    pub(super) lease_stats: LeaseStats,
    /// Stops the lease task (see `lease.rs`).
    pub(super) lease_stop: CancellationToken,
    pub(super) lease_task: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// Runs the shutdown handed over, with their epochs: their leases are released last.
    pub(super) handed_over: Mutex<Vec<(Uuid, i64)>>,
    /// When this process started (µs since the Unix epoch), for `instances.started_at`.
    pub(super) started_at: i64,
    /// The process's one listener for other instances' hints (PostgreSQL, once listening).
    pub(super) notifier: OnceLock<Notifier>,
    /// Held while command rows are done, so each takes effect once and in order.
    pub(super) command_turn: tokio::sync::Mutex<()>,
}

/// A name for this process when none is configured: host name, process id, random suffix.
pub fn default_instance_id() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "reagent".into());
    let suffix = Uuid::new_v4().simple().to_string();
    format!("{host}-{}-{}", std::process::id(), &suffix[..6])
}

impl RunManager {
    pub fn new(
        store: Store,
        models: ModelRegistry,
        tools: ToolRegistry,
        hooks: HookRunner,
        base: AgentConfig,
        compact_llm: Option<Arc<dyn Llm>>,
    ) -> Self {
        let implicit: Arc<[AgentSpec]> = Arc::from(vec![AgentSpec::implicit()]);
        Self {
            catalog: Catalog::new(&implicit, store.clone(), Vec::new()),
            store,
            models,
            tools: std::sync::RwLock::new(tools),
            hooks,
            base,
            compact_llm,
            agents: implicit,
            live: DashMap::new(),
            active: DashMap::new(),
            deleting: DashMap::new(),
            queues: DashMap::new(),
            tracker: TaskTracker::new(),
            shutdown: CancellationToken::new(),
            runs_cancel: CancellationToken::new(),
            handover: CancellationToken::new(),
            flush_interval: DEFAULT_FLUSH_INTERVAL,
            max_query_chars: ServerConfig::default().max_query_chars,
            max_run_image_bytes: ServerConfig::default().max_run_image_bytes,
            trace_url: None,
            approvals: Arc::new(ApprovalBroker::new()),
            writer: OnceLock::new(),
            writer_task: Mutex::new(None),
            observer: None,
            resume_on_restart: true,
            instance_id: default_instance_id(),
            lease: LeaseTimes::default(),
            lease_stats: LeaseStats::default(),
            lease_stop: CancellationToken::new(),
            lease_task: Mutex::new(None),
            handed_over: Mutex::new(Vec::new()),
            started_at: chrono::Utc::now().timestamp_micros(),
            notifier: OnceLock::new(),
            command_turn: tokio::sync::Mutex::new(()),
            dag: DagConfig::default(),
            budgets: Arc::default(),
            tool_pool: ToolPool::default(),
        }
    }

    /// The shared event writer, started on first use.
    pub(super) fn writer(&self) -> Arc<EventWriter> {
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

    /// The current tools (a cheap clone; runs keep the one they started with).
    pub fn tools(&self) -> ToolRegistry {
        self.tools.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Replaces the tools for runs started from now on (an MCP tool list changed).
    pub fn set_tools(&self, tools: ToolRegistry) {
        *self.tools.write().unwrap_or_else(|p| p.into_inner()) = tools;
    }

    /// Sets the configured agents, and the configured MCP servers whose tools API agents may
    /// name before the servers connect.
    pub fn set_agents(&mut self, agents: Vec<AgentSpec>, mcp_servers: Vec<String>) {
        self.agents = Arc::from(agents);
        self.catalog = Catalog::new(&self.agents, self.store.clone(), mcp_servers);
    }

    /// The agent catalog: configured agents and each tenant's own (docs/api.md "Agents").
    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// Runs that have not emitted `done` yet.
    pub fn active_runs(&self) -> usize {
        self.active.len()
    }

    pub fn active_run_of(&self, conversation_id: Uuid) -> Option<Uuid> {
        self.active.get(&conversation_id).map(|r| *r)
    }

    /// The live run, if this owner's run is running.
    pub fn live_run(&self, owner: &str, run_id: Uuid) -> Option<Arc<LiveRun>> {
        self.live
            .get(&run_id)
            .map(|l| l.clone())
            .filter(|l| l.owner == owner)
    }

    /// Stops accepting runs and waits (up to `grace`) for the active ones to end. With
    /// `resume_on_restart` they go on meanwhile, and those still going at the end are handed
    /// over: stopped where they are, left `running` with their checkpoint for the next start
    /// (docs/deployment.md). Without it they are cancelled at once and their final state written.
    pub async fn shutdown(&self, grace: Duration) {
        self.shutdown.cancel();
        self.tracker.close();
        if !self.resume_on_restart {
            self.runs_cancel.cancel();
        }
        let deadline = tokio::time::Instant::now() + grace;
        if tokio::time::timeout_at(deadline, self.tracker.wait())
            .await
            .is_err()
        {
            if self.resume_on_restart {
                tracing::warn!(
                    runs = self.live.len(),
                    "runs still going after the shutdown grace period are handed over to the next start"
                );
                self.handover.cancel();
                let _ = tokio::time::timeout(Duration::from_secs(2), self.tracker.wait()).await;
            } else {
                tracing::warn!("runs did not finish within the shutdown grace period");
            }
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
        // After the last write: another instance (or the next start) may take what is left.
        self.release_leases().await;
        if let Some(n) = self.notifier.get() {
            n.stop();
        }
    }
}
