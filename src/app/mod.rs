//! The one place that assembles the service and runs it. [`App::build`] turns a [`Config`]
//! into the running parts — store (migrated), model registry (metered), tools, hooks, the run
//! manager (after restart recovery, with its lease task), auth — held in the handlers' [`AppState`];
//! [`App::run_until_stopped`] serves the router until a shutdown signal, then stops the runs
//! within the grace period and closes the store. `main` and the integration tests build the
//! service the same way; [`AppOverrides`] only swaps the model clients and tools for fakes.
//!
//! Files: `setup` (configuration sections into the lower layers' types), `metrics` (how the
//! models and runs report to [`Metrics`](crate::server::Metrics)).

mod metrics;
pub mod setup;
#[cfg(test)]
mod tests;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use tokio::net::TcpListener;

use crate::agent::hooks::approval::ApprovalBroker;
use crate::agent::hooks::builtin::AuditSink;
use crate::agent::ToolPool;
use crate::config::{Config, ConfigError};
use crate::llm::registry::ModelRegistry;
use crate::runs::{Budgets, Catalog, LeaseTimes, RunError, RunManager, RunParts, RunSettings};
use crate::server::audit::StoreAudit;
use crate::server::{self, sse, AppState, Auth, Metrics};
use crate::store::{LeaseHolder, Store, StoreError};
use crate::tools::mcp::McpManager;
use crate::tools::ToolRegistry;
use setup::{
    agent_config, check_agent_tools, hook_runner, model_registry, tool_registry, with_mcp_tools,
    SetupError,
};

/// The log filter when `RUST_LOG` is not set: `info`, except rmcp's, which logs each MCP
/// server's whole `initialize` answer (its instructions text can be pages long) as one INFO
/// line; reagent logs the server's readiness and tools itself.
pub const DEFAULT_LOG_FILTER: &str = "info,rmcp=warn";

/// What tests may swap; `None` means "as configured".
#[derive(Default)]
pub struct AppOverrides {
    /// Model clients (fakes); the configuration's `[[models]]` otherwise.
    pub models: Option<ModelRegistry>,
    /// Tools; built-ins plus `[[tools.http]]` otherwise.
    pub tools: Option<ToolRegistry>,
    pub keep_alive: Option<Duration>,
    /// Longest wait before events reach the database (the run manager's default otherwise).
    pub flush_interval: Option<Duration>,
    /// Connect the `[[mcp]]` servers in the background instead of waiting (up to 30 s) for
    /// their first attempts: the binary does, so that `/healthz` answers at once while a slow
    /// server starts (`/readyz` still waits for the `required` ones). Their tools join the
    /// runs started after they connect, and a name clash is then logged, not fatal.
    pub mcp_in_background: bool,
}

/// Why the service could not start.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("database: {0}")]
    Store(#[from] StoreError),
    #[error("{0}")]
    Config(#[from] ConfigError),
    #[error("{0}")]
    Setup(#[from] SetupError),
    #[error("restart recovery failed: {0}")]
    Recover(#[from] RunError),
}

/// The assembled service.
pub struct App {
    pub state: AppState,
}

impl App {
    /// Connects the store (migrating it), builds the run manager with the configured models,
    /// tools and hooks, takes over the runs a previous process left `running` (resumed or
    /// failed, see `RunManager::recover`) and starts the lease task (docs/deployment.md).
    pub async fn build(config: Config, overrides: AppOverrides) -> Result<App, BuildError> {
        // A transaction idle for half the lease TTL is a paused or stuck instance's: ended, so
        // its row locks do not keep its runs from being taken over (docs/deployment.md).
        let idle = Duration::from_secs(config.server.lease_ttl_s) / 2;
        let store = Store::connect_with(&config.server.database_url, Some(idle)).await?;
        for warning in [
            setup::key_warning(&config),
            setup::open_bind_warning(&config),
        ]
        .into_iter()
        .flatten()
        {
            tracing::warn!("{warning}");
        }
        let metrics = Metrics::new();
        let models = match overrides.models {
            Some(m) => m,
            None => model_registry(&config)?,
        };
        let models = metrics::meter_models(&metrics, &models);
        let models = match crate::telemetry::enabled() {
            true => metrics::trace_models(&config, &models),
            false => models,
        };
        let http = setup::http_client()?;
        let a2a = setup::a2a_tools(&config, &http)?;
        let base_tools = match overrides.tools {
            Some(t) => t,
            None => tool_registry(&config, &http, &a2a)?,
        };
        // In the background, bounded by the card timeout: a remote that is down is logged and
        // its calls fail until it answers; reagent serves regardless.
        for agent in a2a {
            tokio::spawn(async move { agent.warm_up().await });
        }
        check_agent_tools(&config, &base_tools)?;
        let mcp = McpManager::spawn(
            &config.mcp,
            http.clone(),
            Some(metrics::mcp_observer(&metrics)),
        );
        // Before the tools are read, so a list that arrives in between is not missed.
        let mcp_changes = mcp.subscribe();
        let tools = with_mcp(&base_tools, &mcp, !overrides.mcp_in_background).await?;
        let approvals = Arc::new(ApprovalBroker::new());
        let audit = Arc::new(StoreAudit(store.clone())) as Arc<dyn AuditSink>;
        let hooks = hook_runner(&config, &tools, approvals.clone(), Some(audit), &http)?;
        let parts = RunParts {
            tools,
            hooks,
            approvals,
            observer: Some(metrics::run_observer(&metrics)),
            ..run_parts(&config, &store, &models)
        };
        let mut settings = run_settings(&config);
        if let Some(interval) = overrides.flush_interval {
            settings.flush_interval = interval;
        }
        store.hold_leases_as(LeaseHolder {
            instance: settings.instance_id.clone(),
            ttl: settings.lease.ttl,
        });
        let runs = Arc::new(RunManager::new(parts, settings));
        follow_mcp_tools(&mcp, mcp_changes, base_tools, &runs);
        take_over(&runs).await?;
        let auth = auth(&config);
        Ok(App {
            state: AppState {
                config: Arc::new(config),
                store,
                runs,
                models,
                metrics,
                auth,
                mcp,
                keep_alive: overrides.keep_alive.unwrap_or(sse::DEFAULT_KEEP_ALIVE),
            },
        })
    }

    pub fn router(&self) -> Router {
        server::router(self.state.clone())
    }

    /// Serves on `listener` until `signal` completes; then stops accepting and waits up to
    /// `server.shutdown_grace_s` for the runs (see `RunManager::shutdown`: cancelled at once
    /// without `resume_on_restart`, else left running for the next start after the grace),
    /// and closes the store.
    pub async fn run_until_stopped(
        &self,
        listener: TcpListener,
        signal: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let grace = Duration::from_secs(self.state.config.server.shutdown_grace_s);
        // Tests and scripts read this line to find the port when REAGENT_BIND uses port 0.
        tracing::info!("reagent listening on http://{}", listener.local_addr()?);
        let (signalled_tx, signalled_rx) = tokio::sync::oneshot::channel::<()>();
        let shutdown = async move {
            signal.await;
            tracing::info!("shutdown requested; finishing in-flight requests and runs");
            let _ = signalled_tx.send(());
        };
        let limits = server::ConnectionLimits::new(
            self.state.config.server.header_timeout_s,
            self.state.config.server.max_connections,
            self.state.config.server.sse_stall_s,
        );
        tracing::info!(
            header_timeout_s = limits.header_timeout.as_secs(),
            max_connections = limits.max_connections,
            stall_timeout_s = limits.stall_timeout.as_secs(),
            "connection limits"
        );
        let serving = server::serve_with(listener, self.router(), limits, shutdown);
        let runs = self.state.runs.clone();
        let deadline = async move {
            match signalled_rx.await {
                Ok(()) => runs.shutdown(grace).await,
                Err(_) => std::future::pending::<()>().await,
            }
            // Runs are done (or the grace is spent); leave a moment for streams to flush.
            tokio::time::sleep(Duration::from_secs(1)).await;
        };
        tokio::select! {
            result = serving => result?,
            () = deadline => tracing::warn!(grace_s = grace.as_secs(), "connections still open after the runs stopped; exiting"),
        }
        self.shutdown(Duration::from_secs(1)).await;
        tracing::info!("reagent stopped");
        Ok(())
    }

    /// Stops runs (cancelling the active ones, waiting up to `grace` for their final state)
    /// and closes the database pool.
    pub async fn shutdown(&self, grace: Duration) {
        self.state.runs.shutdown(grace).await;
        self.state.mcp.shutdown().await;
        self.state.store.close().await;
    }
}

/// `base` plus the MCP tools listed so far. `strict` waits for every server's first attempt
/// and refuses a name two tools share (stopping the servers); otherwise the servers keep
/// connecting in the background and a clash is logged when their lists arrive.
async fn with_mcp(
    base: &ToolRegistry,
    mcp: &Arc<McpManager>,
    strict: bool,
) -> Result<ToolRegistry, BuildError> {
    if strict {
        mcp.settled().await;
    }
    match with_mcp_tools(base, mcp, strict) {
        Ok(tools) => Ok(tools),
        Err(e) => {
            mcp.shutdown().await;
            Err(e.into())
        }
    }
}

/// The run manager's parts the configuration decides: the models, the base agent settings
/// and compaction model, the agent catalog, budgets and the tool pool.
fn run_parts(config: &Config, store: &Store, models: &ModelRegistry) -> RunParts {
    let compact = config
        .react
        .compact_model
        .as_deref()
        .and_then(|name| models.get(name));
    let mcp_servers = config.mcp.iter().map(|m| m.name.clone()).collect();
    RunParts {
        base: agent_config(&config.react),
        compact_llm: compact,
        catalog: Catalog::new(&config.agents, store.clone(), mcp_servers),
        budgets: Budgets {
            rules: config.budgets.clone(),
            prices: config
                .models
                .iter()
                .filter_map(|m| Some((m.name.clone(), m.price?)))
                .collect(),
            max_active_runs_per_tenant: config.server.max_active_runs_per_tenant,
            ..Budgets::default()
        },
        tool_pool: ToolPool::new(
            config.tools.max_concurrent,
            config.tools.max_concurrent_per_run,
        ),
        ..RunParts::new(store.clone(), models.clone())
    }
}

/// The run manager's settings from the configuration.
fn run_settings(config: &Config) -> RunSettings {
    let server = &config.server;
    let defaults = RunSettings::default();
    RunSettings {
        max_query_chars: server.max_query_chars,
        max_run_image_bytes: server.max_run_image_bytes,
        trace_url: server.trace_url.clone(),
        resume_on_restart: server.resume_on_restart,
        instance_id: server.instance_id.clone().unwrap_or(defaults.instance_id),
        lease: LeaseTimes {
            ttl: Duration::from_secs(server.lease_ttl_s),
            renew: Duration::from_secs(server.lease_renew_s),
        },
        dag: config.dag.clone(),
        flush_interval: defaults.flush_interval,
    }
}

/// Takes over the runs a previous process (or a lapsed lease) left running, then keeps this
/// instance's leases alive.
async fn take_over(runs: &Arc<RunManager>) -> Result<(), BuildError> {
    // Before recovery, so the runs it resumes hear the other instances too.
    runs.listen_to_instances()
        .await
        .map_err(|e| BuildError::Store(StoreError::Connect(e.to_string())))?;
    let recovered = runs.recover().await?;
    runs.start_leases();
    if recovered.total() > 0 {
        tracing::warn!(
            resumed = recovered.resumed,
            failed = recovered.failed,
            "took over runs left running by a previous process (or whose lease lapsed)"
        );
    }
    Ok(())
}

/// The API keys and the metrics key.
fn auth(config: &Config) -> Arc<Auth> {
    Arc::new(Auth::new(
        config
            .auth
            .keys
            .iter()
            .map(|k| (k.name.as_str(), k.key.expose())),
        config.auth.metrics_key.as_ref().map(|k| k.expose()),
        config.server.rate_limit_per_minute,
    ))
}

/// Gives runs started from now on the new tools whenever an MCP server's list changes.
fn follow_mcp_tools(
    mcp: &Arc<McpManager>,
    mut changes: tokio::sync::watch::Receiver<u64>,
    base: ToolRegistry,
    runs: &Arc<RunManager>,
) {
    if mcp.is_empty() {
        return;
    }
    let mcp = Arc::downgrade(mcp);
    let runs = Arc::downgrade(runs);
    tokio::spawn(async move {
        while changes.changed().await.is_ok() {
            let (Some(mcp), Some(runs)) = (mcp.upgrade(), runs.upgrade()) else {
                return;
            };
            if let Ok(tools) = with_mcp_tools(&base, &mcp, false) {
                runs.set_tools(tools);
            }
        }
    });
}
