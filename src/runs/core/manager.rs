//! [`RunManager`] itself: what it owns (the live runs, the per-conversation slots and interrupt
//! queues, the run tasks, the shared event writer), its errors, and the shutdown that stops it.
//! What it does with a run is in the files named after the run's life: `start`, `drive`,
//! `control`, `read` (and `runs/cluster/` for runs across instances).

use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use dashmap::DashMap;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use uuid::Uuid;

use super::follow_up::FollowUps;
use super::log::EventLog;
use super::parts::{EventObserver, RunParts, RunSettings};
use super::persist::EventWriter;
use super::progress::Progress;
use crate::agent::hooks::approval::ApprovalBroker;
use crate::agent::hooks::HookRunner;
use crate::agent::{AgentConfig, InterruptQueue, ToolPool};
use crate::llm::registry::ModelRegistry;
use crate::llm::Llm;
use crate::runs::budget::ledger::Ledger;
use crate::runs::budget::{Budgets, Refusal};
use crate::runs::catalog::{Catalog, CatalogError};
use crate::store::notify::Notifier;
use crate::store::{Store, StoreError};
use crate::telemetry::RunTrace;
use crate::tools::ToolRegistry;

/// The error text of runs found `running` at start-up.
pub const RESTART_ERROR: &str = "interrupted by server restart";

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
    pub(in crate::runs) done: CancellationToken,
    /// Its counters so far, from its events.
    pub progress: Arc<Progress>,
    /// Follow-ups that came after the loop closed: the next run's query.
    pub(in crate::runs) follow_ups: FollowUps,
    /// The run's budget and usage accounting (every LLM call of the run goes through it).
    pub(in crate::runs) ledger: Arc<Ledger>,
}

/// What the run's last log line and its trace say besides its outcome: the agent, and the
/// run's span (nothing while tracing is off).
pub(in crate::runs) struct RunLabels {
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

impl From<Refusal> for RunError {
    fn from(r: Refusal) -> Self {
        match r {
            Refusal::TooManyActiveRuns(max) => Self::TooManyActiveRuns(max),
            Refusal::BudgetExceeded {
                message,
                retry_after,
            } => Self::BudgetExceeded {
                message,
                retry_after,
            },
            Refusal::Store(e) => Self::Store(e),
        }
    }
}

/// The lease task's counters for `/metrics` (see [`RunManager::lease_counts`]).
#[derive(Debug, Default)]
pub(in crate::runs) struct LeaseStats {
    pub takeovers: AtomicU64,
    pub renewal_failures: AtomicU64,
}

/// Owns every running agent. Made from its parts and settings ([`RunManager::new`]); what it
/// holds besides them is the state of the runs it executes.
pub struct RunManager {
    pub(in crate::runs) store: Store,
    pub(in crate::runs) models: ModelRegistry,
    /// Swapped when an MCP server's tool list changes; each run takes a snapshot.
    tools: std::sync::RwLock<ToolRegistry>,
    pub(in crate::runs) hooks: HookRunner,
    pub(in crate::runs) base: AgentConfig,
    pub(in crate::runs) compact_llm: Option<Arc<dyn Llm>>,
    /// Where runs and `/api/agents` find agents: the configured ones and each tenant's own.
    pub(in crate::runs) catalog: Catalog,
    /// The broker the approval hook waits on (see [`RunParts::approvals`]).
    pub(in crate::runs) approvals: Arc<ApprovalBroker>,
    pub(in crate::runs) observer: Option<EventObserver>,
    pub(in crate::runs) budgets: Arc<Budgets>,
    pub(in crate::runs) tool_pool: ToolPool,
    pub(in crate::runs) settings: RunSettings,
    pub(in crate::runs) live: DashMap<Uuid, Arc<LiveRun>>,
    /// conversation → its active run.
    pub(in crate::runs) active: DashMap<Uuid, Uuid>,
    /// Conversations being deleted: no run may start in them.
    pub(in crate::runs) deleting: DashMap<Uuid, ()>,
    pub(in crate::runs) queues: DashMap<Uuid, Arc<InterruptQueue>>,
    pub(in crate::runs) tracker: TaskTracker,
    /// Cancelled when the server stops: no run starts after it.
    pub(in crate::runs) shutdown: CancellationToken,
    /// The parent of every run's cancel token: the runs themselves are cancelled at shutdown
    /// only when they will not be resumed.
    pub(in crate::runs) runs_cancel: CancellationToken,
    /// Stops the runs still going at the end of the shutdown grace without ending them: left
    /// `running` with their checkpoint, the next start resumes them (docs/deployment.md).
    pub(in crate::runs) handover: CancellationToken,
    /// The one writer of every run's events, started with the first run.
    pub(in crate::runs) writer: OnceLock<Arc<EventWriter>>,
    writer_task: Mutex<Option<tokio::task::JoinHandle<()>>>,
    pub(in crate::runs) lease_stats: LeaseStats,
    /// Stops the lease task (see `cluster/lease.rs`).
    pub(in crate::runs) lease_stop: CancellationToken,
    pub(in crate::runs) lease_task: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// Runs the shutdown handed over, with their epochs: their leases are released last.
    pub(in crate::runs) handed_over: Mutex<Vec<(Uuid, i64)>>,
    /// When this process started (µs since the Unix epoch), for `instances.started_at`.
    pub(in crate::runs) started_at: i64,
    /// The process's one listener for other instances' hints (PostgreSQL, once listening).
    pub(in crate::runs) notifier: OnceLock<Notifier>,
    /// Held while command rows are done, so each takes effect once and in order.
    pub(in crate::runs) command_turn: tokio::sync::Mutex<()>,
}

impl RunManager {
    pub fn new(parts: RunParts, settings: RunSettings) -> Self {
        Self {
            store: parts.store,
            models: parts.models,
            tools: std::sync::RwLock::new(parts.tools),
            hooks: parts.hooks,
            base: parts.base,
            compact_llm: parts.compact_llm,
            catalog: parts.catalog,
            approvals: parts.approvals,
            observer: parts.observer,
            budgets: Arc::new(parts.budgets),
            tool_pool: parts.tool_pool,
            settings,
            live: DashMap::new(),
            active: DashMap::new(),
            deleting: DashMap::new(),
            queues: DashMap::new(),
            tracker: TaskTracker::new(),
            shutdown: CancellationToken::new(),
            runs_cancel: CancellationToken::new(),
            handover: CancellationToken::new(),
            writer: OnceLock::new(),
            writer_task: Mutex::new(None),
            lease_stats: LeaseStats::default(),
            lease_stop: CancellationToken::new(),
            lease_task: Mutex::new(None),
            handed_over: Mutex::new(Vec::new()),
            started_at: chrono::Utc::now().timestamp_micros(),
            notifier: OnceLock::new(),
            command_turn: tokio::sync::Mutex::new(()),
        }
    }

    /// The settings it was made with.
    pub fn settings(&self) -> &RunSettings {
        &self.settings
    }

    /// The shared event writer, started on first use.
    pub(in crate::runs) fn writer(&self) -> Arc<EventWriter> {
        self.writer
            .get_or_init(|| {
                let w = EventWriter::new(self.store.clone(), self.settings.flush_interval);
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
        if !self.settings.resume_on_restart {
            self.runs_cancel.cancel();
        }
        let deadline = tokio::time::Instant::now() + grace;
        if tokio::time::timeout_at(deadline, self.tracker.wait())
            .await
            .is_err()
        {
            if self.settings.resume_on_restart {
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
