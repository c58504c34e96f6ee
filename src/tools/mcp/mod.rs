//! MCP tool servers (docs/protocols.md): every `[[mcp]]` entry gets one long-lived session kept by a
//! supervisor task ([`server`]); its tools are ordinary [`Tool`]s ([`tool::McpTool`]) named
//! `<server>__<tool>` ([`names`]), results mapped by [`content`]. [`McpManager`] starts all
//! servers concurrently, waits for each one's first attempt (bounded), refuses a name two
//! tools share, tells the app when a tool list changes, and stops every server (whole stdio
//! process groups) on shutdown.
//!
//! Files: `session` (rmcp transports and requests), `stdio` (the child and its checked
//! output), `frame` (what of a line gets through), `server` (state and calls), `supervisor`,
//! `tool`, `content`, `names`, `traced` (the HTTP client that sends a call's `traceparent`).

mod content;
mod frame;
mod names;
mod server;
mod session;
mod stdio;
mod supervisor;
mod tool;
mod traced;

use std::sync::Arc;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

pub use names::tool_name;
pub use server::{CallObserver, ServerStatus, SkippedTool, State};
pub use tool::McpTool;

use crate::config::McpServerConfig;
use crate::tools::Tool;
use server::{Server, CONNECT_TIMEOUT};

/// All configured MCP servers.
pub struct McpManager {
    servers: Vec<Arc<Server>>,
    version: watch::Sender<u64>,
    shutdown: CancellationToken,
    tasks: TaskTracker,
}

impl McpManager {
    /// Starts a supervisor per server and waits (at most the connect timeout) for every
    /// first attempt, so start-up sees the tools of the servers that came up. A server that
    /// did not is left retrying; reagent serves regardless.
    pub async fn start(
        configs: &[McpServerConfig],
        http: reqwest::Client,
        observer: Option<CallObserver>,
    ) -> Arc<McpManager> {
        let manager = Self::spawn(configs, http, observer);
        manager.settled().await;
        manager
    }

    /// Starts a supervisor per server and returns at once: every server is `connecting`
    /// until its first attempt ends (for a start-up that serves before MCP is up).
    pub fn spawn(
        configs: &[McpServerConfig],
        http: reqwest::Client,
        observer: Option<CallObserver>,
    ) -> Arc<McpManager> {
        let version = watch::channel(0u64).0;
        let shutdown = CancellationToken::new();
        let tasks = TaskTracker::new();
        let servers: Vec<Arc<Server>> = configs
            .iter()
            .map(|c| Arc::new(Server::new(c.clone(), version.clone(), observer.clone())))
            .collect();
        for s in &servers {
            tasks.spawn(s.clone().supervise(http.clone(), shutdown.clone()));
        }
        Arc::new(McpManager {
            servers,
            version,
            shutdown,
            tasks,
        })
    }

    /// Waits, at most the connect timeout, until every server's first attempt has ended.
    pub async fn settled(&self) {
        let first = futures::future::join_all(self.servers.iter().map(|s| s.settled()));
        let _ = tokio::time::timeout(CONNECT_TIMEOUT, first).await;
    }

    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// Every server's tools as last listed (calls to a server that is down fail at once).
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        let mut out: Vec<Arc<dyn Tool>> = Vec::new();
        for s in &self.servers {
            for entry in s.tools().iter() {
                out.push(Arc::new(McpTool {
                    server: s.clone(),
                    entry: entry.clone(),
                }));
            }
        }
        out
    }

    /// `(reagent name, owner)` of every tool, owners like `mcp server 'files' tool 'read.x'`.
    pub fn claims(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for s in &self.servers {
            for t in s.tools().iter() {
                out.push((
                    t.name.clone(),
                    format!("MCP server '{}' tool '{}'", s.cfg.name, t.remote),
                ));
            }
        }
        out
    }

    pub fn status(&self) -> Vec<ServerStatus> {
        self.servers.iter().map(|s| s.status()).collect()
    }

    /// The `required = true` servers that are not ready.
    pub fn required_not_ready(&self) -> Vec<String> {
        self.servers
            .iter()
            .filter(|s| s.cfg.required && !s.is_ready())
            .map(|s| s.cfg.name.clone())
            .collect()
    }

    /// Changes whenever a server's tool list does.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.version.subscribe()
    }

    /// Closes every session and kills every stdio server's process group.
    pub async fn shutdown(&self) {
        self.shutdown.cancel();
        self.tasks.close();
        self.tasks.wait().await;
    }
}

/// The first reagent name claimed twice, as a start-up error naming both tools.
pub fn collision(claims: impl IntoIterator<Item = (String, String)>) -> Option<String> {
    names::first_collision(claims)
        .map(|(name, a, b)| format!("two tools would be named '{name}': {a} and {b}"))
}
