//! What a [`RunManager`](super::RunManager) is made from: its parts ([`RunParts`]: the store,
//! the models and tools, hooks and approvals, the agent catalog, budgets, the tool pool, an
//! observer) and one settings value ([`RunSettings`]: the numbers and names read from the
//! configuration). `app/` fills both from the configuration; a test starts from
//! [`RunParts::new`] and [`RunSettings::default`] and changes what it needs.

use std::sync::Arc;
use std::time::Duration;

use uuid::Uuid;

use crate::agent::hooks::approval::ApprovalBroker;
use crate::agent::hooks::HookRunner;
use crate::agent::{AgentConfig, AgentEvent, ToolPool};
use crate::config::{AgentSpec, DagConfig, ServerConfig};
use crate::llm::registry::ModelRegistry;
use crate::llm::Llm;
use crate::runs::budget::Budgets;
use crate::runs::catalog::Catalog;
use crate::store::Store;
use crate::tools::ToolRegistry;

/// The shared event writer's default interval. Each commit dirties about one page of the
/// `(run, seq)` index per live run whatever the number of events it carries, so a longer
/// interval costs fewer page writes (BENCHMARKS.md); the price is that a crash can lose up to
/// this much of the streamed events (RELIABILITY.md). A run's end does not wait for it.
pub const DEFAULT_FLUSH_INTERVAL: Duration = Duration::from_millis(100);

/// Sees each event of each run as it is emitted; must be cheap (it runs on the run's task).
pub type EventObserver = Arc<dyn Fn(&AgentEvent) + Send + Sync>;

/// The services a run manager runs agents with.
pub struct RunParts {
    pub store: Store,
    pub models: ModelRegistry,
    /// The tools runs start with (swapped later when an MCP server's list changes).
    pub tools: ToolRegistry,
    pub hooks: HookRunner,
    /// The engine's settings every run starts from.
    pub base: AgentConfig,
    /// The model that compacts long histories, if one is configured.
    pub compact_llm: Option<Arc<dyn Llm>>,
    /// Where runs and `/api/agents` find agents: the configured ones and each tenant's own.
    pub catalog: Catalog,
    /// The broker the approval hook waits on (the same one `hooks` was built with), so
    /// reviewers answer only their own runs' requests.
    pub approvals: Arc<ApprovalBroker>,
    /// Budgets, prices and the per-tenant run cap (docs/configuration.md).
    pub budgets: Budgets,
    /// Tool calls executing at once: each run gets its share of the process's slots.
    pub tool_pool: ToolPool,
    /// Called with every event of every run, in the task that emits it, before the event is
    /// logged (the app's metrics count runs, tool calls and outcomes this way).
    pub observer: Option<EventObserver>,
}

impl RunParts {
    /// `store` and `models` with the rest empty or default: no tools, no hooks, the implicit
    /// agent only, no budgets.
    pub fn new(store: Store, models: ModelRegistry) -> Self {
        Self {
            catalog: Catalog::new(&[AgentSpec::implicit()], store.clone(), Vec::new()),
            store,
            models,
            tools: ToolRegistry::default(),
            hooks: HookRunner::default(),
            base: AgentConfig::default(),
            compact_llm: None,
            approvals: Arc::new(ApprovalBroker::new()),
            budgets: Budgets::default(),
            tool_pool: ToolPool::default(),
            observer: None,
        }
    }
}

/// The run manager's settings (docs/configuration.md, docs/deployment.md).
#[derive(Clone, Debug)]
pub struct RunSettings {
    /// Shortest time between two writes of the shared event writer, i.e. about the longest an
    /// event waits before it is written to the database (plus the write itself).
    pub flush_interval: Duration,
    /// Longest query or interrupt, in characters (`server.max_query_chars`).
    pub max_query_chars: usize,
    /// Decoded image bytes a run may hold and send (`server.max_run_image_bytes`): more in a
    /// query is 400; a history's older images beyond it go as text.
    pub max_run_image_bytes: usize,
    /// `REAGENT_TRACE_URL`: `done.trace_url` is this with the run's trace id (tracing on).
    pub trace_url: Option<String>,
    /// Runs a previous process left `running` go on from their checkpoint at start-up
    /// (`REAGENT_RESUME_ON_RESTART`); `false` fails them as before.
    pub resume_on_restart: bool,
    /// This process's name in `step {type:"resumed"}` and on its leases (`REAGENT_INSTANCE_ID`).
    pub instance_id: String,
    /// `REAGENT_LEASE_TTL_S` / `REAGENT_LEASE_RENEW_S` (docs/deployment.md).
    pub lease: LeaseTimes,
    /// The engine choice and DAG mode.
    pub dag: DagConfig,
}

impl Default for RunSettings {
    fn default() -> Self {
        let server = ServerConfig::default();
        Self {
            flush_interval: DEFAULT_FLUSH_INTERVAL,
            max_query_chars: server.max_query_chars,
            max_run_image_bytes: server.max_run_image_bytes,
            trace_url: None,
            resume_on_restart: true,
            instance_id: default_instance_id(),
            lease: LeaseTimes::default(),
            dag: DagConfig::default(),
        }
    }
}

/// `REAGENT_LEASE_TTL_S` and `REAGENT_LEASE_RENEW_S`.
#[derive(Clone, Copy, Debug)]
pub struct LeaseTimes {
    pub ttl: Duration,
    pub renew: Duration,
}

impl Default for LeaseTimes {
    fn default() -> Self {
        Self {
            ttl: Duration::from_secs(20),
            renew: Duration::from_secs(5),
        }
    }
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
