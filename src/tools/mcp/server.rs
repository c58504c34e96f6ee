//! One configured MCP server: its state as `/api/mcp` shows it, its current tools and its
//! calls; the task that keeps its one long-lived session is in `supervisor`. Calls check the
//! state first, so a dead server answers at once.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use globset::{Glob, GlobSet, GlobSetBuilder};
use rmcp::{Peer, RoleClient, ServiceError};
use serde::Serialize;
use serde_json::Value;
use tokio::sync::{watch, Notify};

use super::content::map_result;
use super::frame::{has_too_deep, MAX_DEPTH};
use super::names::tool_name;
use super::session;
use crate::config::McpServerConfig;
use crate::tools::{ToolError, ToolOutput};

/// Longest wait for `initialize` plus the first `tools/list`.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    Connecting,
    Ready,
    Failed,
    Restarting,
}

/// A tool as the server listed it, with its reagent name and the operator's marks.
#[derive(Clone, Debug)]
pub struct ToolEntry {
    pub name: String,
    pub remote: String,
    pub description: String,
    pub schema: Value,
    pub writes: bool,
    pub requires_approval: bool,
}

/// A listed tool reagent does not offer, and why (shown by `/api/mcp`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SkippedTool {
    pub tool: String,
    pub reason: String,
}

/// The tools of one listing: those offered and those skipped.
pub(super) struct Listing {
    pub tools: Arc<[ToolEntry]>,
    pub skipped: Arc<[SkippedTool]>,
}

impl Listing {
    pub fn empty() -> Self {
        Self {
            tools: Arc::from(Vec::new()),
            skipped: Arc::from(Vec::new()),
        }
    }
}

struct Inner {
    state: State,
    last_error: Option<String>,
    since: DateTime<Utc>,
    tools: Arc<[ToolEntry]>,
    skipped: Arc<[SkippedTool]>,
    peer: Option<Peer<RoleClient>>,
    /// Bumped with every new session, so a late error from an old one is not blamed on it.
    session: u64,
    /// The first connection attempt has finished (well or not).
    settled: bool,
}

/// What `/api/mcp` shows of a server (no secrets: no env, headers or URL query).
#[derive(Clone, Debug, Serialize)]
pub struct ServerStatus {
    pub name: String,
    pub transport: &'static str,
    pub state: State,
    pub tools: Vec<String>,
    /// Listed tools that are not offered, with the reason (a schema reagent cannot use).
    pub skipped_tools: Vec<SkippedTool>,
    pub last_error: Option<String>,
    pub since: DateTime<Utc>,
    pub required: bool,
}

/// Reports calls for the metrics: `(server, ok, seconds)`.
pub type CallObserver = Arc<dyn Fn(&str, bool, f64) + Send + Sync>;

pub struct Server {
    pub cfg: McpServerConfig,
    inner: Mutex<Inner>,
    pub(super) list_changed: Arc<Notify>,
    /// A call found the connection broken: the supervisor drops the session and reconnects.
    pub(super) broken: Notify,
    settled: watch::Sender<bool>,
    /// Bumped whenever the tool list changes, shared by every server of the manager.
    version: watch::Sender<u64>,
    allow: Option<GlobSet>,
    writes: GlobSet,
    approval: GlobSet,
    pub observer: Option<CallObserver>,
}

fn globs(patterns: &[String]) -> GlobSet {
    let mut b = GlobSetBuilder::new();
    for p in patterns {
        // Checked when the configuration was loaded.
        if let Ok(g) = Glob::new(p) {
            b.add(g);
        }
    }
    b.build().unwrap_or_else(|_| GlobSet::empty())
}

impl Server {
    pub fn new(
        cfg: McpServerConfig,
        version: watch::Sender<u64>,
        observer: Option<CallObserver>,
    ) -> Self {
        Self {
            allow: (!cfg.tools.is_empty()).then(|| globs(&cfg.tools)),
            writes: globs(&cfg.writes),
            approval: globs(&cfg.requires_approval),
            cfg,
            inner: Mutex::new(Inner {
                state: State::Connecting,
                last_error: None,
                since: Utc::now(),
                tools: Arc::from(Vec::new()),
                skipped: Arc::from(Vec::new()),
                peer: None,
                session: 0,
                settled: false,
            }),
            list_changed: Arc::new(Notify::new()),
            broken: Notify::new(),
            settled: watch::channel(false).0,
            version,
            observer,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn status(&self) -> ServerStatus {
        let inner = self.lock();
        ServerStatus {
            name: self.cfg.name.clone(),
            transport: self.cfg.transport(),
            state: inner.state,
            tools: inner.tools.iter().map(|t| t.name.clone()).collect(),
            skipped_tools: inner.skipped.to_vec(),
            last_error: inner.last_error.clone(),
            since: inner.since,
            required: self.cfg.required,
        }
    }

    pub fn tools(&self) -> Arc<[ToolEntry]> {
        self.lock().tools.clone()
    }

    pub fn is_ready(&self) -> bool {
        self.lock().state == State::Ready
    }

    /// Waits until the first connection attempt has finished.
    pub async fn settled(&self) {
        let mut rx = self.settled.subscribe();
        let _ = rx.wait_for(|s| *s).await;
    }

    pub(super) fn set(
        &self,
        state: State,
        error: Option<String>,
        listing: Option<Listing>,
        peer: Option<Peer<RoleClient>>,
    ) {
        let changed_tools = {
            let mut inner = self.lock();
            if inner.state != state {
                inner.since = Utc::now();
            }
            inner.state = state;
            if error.is_some() || state == State::Ready {
                inner.last_error = error;
            }
            if peer.is_some() && inner.peer.is_none() {
                inner.session += 1;
            }
            inner.peer = peer;
            let changed = listing.is_some();
            if let Some(l) = listing {
                inner.tools = l.tools;
                inner.skipped = l.skipped;
            }
            if state != State::Connecting && state != State::Restarting {
                inner.settled = true;
            }
            changed
        };
        if changed_tools {
            self.version.send_modify(|v| *v += 1);
        }
        if self.lock().settled {
            self.settled.send_replace(true);
        }
    }

    /// The listed tools this server exposes, with reagent names; bad ones are skipped with
    /// the reason (logged, and shown by `/api/mcp`).
    pub(super) fn entries(&self, listed: Vec<Value>) -> Listing {
        let mut tools = Vec::new();
        let mut skipped = Vec::new();
        for t in listed {
            let remote = t.get("name").and_then(Value::as_str).unwrap_or_default();
            if !remote.is_empty() && self.allow.as_ref().is_some_and(|a| !a.is_match(remote)) {
                continue;
            }
            let schema = t.get("inputSchema").cloned().unwrap_or(Value::Null);
            let unusable = if remote.is_empty() {
                Some("it has no name".to_string())
            } else if has_too_deep(&t) {
                Some(format!(
                    "its definition nests deeper than {MAX_DEPTH} levels"
                ))
            } else if !schema.is_object() {
                Some("its inputSchema is not an object".to_string())
            } else {
                None
            };
            if let Some(reason) = unusable {
                tracing::warn!(server = %self.cfg.name, tool = remote, "skipped an MCP tool: {reason}");
                skipped.push(SkippedTool {
                    tool: remote.to_string(),
                    reason,
                });
                continue;
            }
            tools.push(ToolEntry {
                name: tool_name(&self.cfg.name, remote),
                remote: remote.to_string(),
                description: t
                    .get("description")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                schema,
                writes: self.writes.is_match(remote),
                requires_approval: self.approval.is_match(remote),
            });
        }
        Listing {
            tools: Arc::from(tools),
            skipped: Arc::from(skipped),
        }
    }

    /// One `tools/call`. Never replayed: a call the transport loses is an error.
    pub async fn call(&self, remote: &str, args: Value) -> Result<ToolOutput, ToolError> {
        let (peer, session_id) = {
            let inner = self.lock();
            match (&inner.peer, inner.state) {
                (Some(p), State::Ready) if !p.is_transport_closed() => (p.clone(), inner.session),
                (_, state) => {
                    return Err(ToolError::Failed(format!(
                        "MCP server '{}' is not available ({}){}",
                        self.cfg.name,
                        serde_json::to_value(state)
                            .ok()
                            .and_then(|v| v.as_str().map(String::from))
                            .unwrap_or_default(),
                        inner
                            .last_error
                            .as_ref()
                            .map(|e| format!(": {e}"))
                            .unwrap_or_default()
                    )))
                }
            }
        };
        let arguments = match args {
            Value::Object(m) => m,
            Value::Null => serde_json::Map::new(),
            other => {
                return Err(ToolError::InvalidArguments(format!(
                    "expected a JSON object, got {other}"
                )))
            }
        };
        let started = Instant::now();
        let timeout = Duration::from_secs(self.cfg.timeout_s);
        let result = session::call_tool(&peer, remote, arguments, timeout).await;
        let outcome = match result {
            Ok(value) => map_result(remote, &value),
            Err(e) => {
                // The connection is gone (an HTTP server that went away does not end the
                // session by itself): the supervisor reconnects. Never replayed.
                if matches!(
                    e,
                    ServiceError::TransportClosed | ServiceError::TransportSend(_)
                ) {
                    let mut inner = self.lock();
                    if inner.session == session_id && inner.peer.is_some() {
                        inner.peer = None;
                        inner.state = State::Failed;
                        inner.since = Utc::now();
                        inner.last_error = Some(session::describe_ref(&e));
                        drop(inner);
                        self.broken.notify_one();
                    }
                }
                Err(ToolError::Failed(session::describe(e)))
            }
        };
        if let Some(observe) = &self.observer {
            observe(
                &self.cfg.name,
                outcome.is_ok(),
                started.elapsed().as_secs_f64(),
            );
        }
        outcome
    }
}
