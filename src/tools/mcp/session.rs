//! One connection to an MCP server through rmcp: the stdio child (in its own process group,
//! its output checked by `stdio`) or the streamable HTTP transport, our client handler (which turns
//! `notifications/tools/list_changed` into a wake-up of the supervisor), and the two requests
//! reagent makes. Both requests go through `send_request_with_option`, not the SDK's cached
//! list helpers, so a failed refresh is an error and never an answer from a stale cache; and
//! results are read as JSON so one bad tool or content part is skipped, not fatal.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotificationParam, ClientRequest,
    GetExtensions, ListToolsRequest, PaginatedRequestParams, RequestId,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientHandler, Peer, RoleClient, ServiceError, ServiceExt};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::Notify;

use super::traced::{TraceParent, TracedHttp};
use super::{frame, stdio};
use crate::config::McpServerConfig;

/// Most pages of `tools/list` followed (a server that loops its cursor is cut off).
const MAX_PAGES: usize = 100;

/// Our side of the session: wakes the supervisor when the server's tool list changes.
pub struct Handler {
    pub list_changed: Arc<Notify>,
}

impl ClientHandler for Handler {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.list_changed.notify_one();
    }
}

pub type Running = RunningService<RoleClient, Handler>;

/// A live session, with the stdio child's process group (its pid) when there is one.
pub struct Session {
    pub running: Running,
    pub pgid: Option<i32>,
}

/// Starts (stdio) or reaches (HTTP) the server and completes `initialize`.
pub async fn connect(
    cfg: &McpServerConfig,
    http: &reqwest::Client,
    list_changed: Arc<Notify>,
) -> Result<Session, String> {
    let handler = Handler { list_changed };
    if let Some(url) = &cfg.url {
        let mut headers = HashMap::new();
        for (name, value) in &cfg.headers {
            let n = reqwest::header::HeaderName::try_from(name.as_str())
                .map_err(|_| format!("header {name:?} is not a valid header name"))?;
            // The value may be a secret: the error names the header only.
            let v = reqwest::header::HeaderValue::try_from(value.as_str())
                .map_err(|_| format!("the value of header {name:?} is not a valid header value"))?;
            headers.insert(n, v);
        }
        let config = StreamableHttpClientTransportConfig::with_uri(url.as_str())
            .custom_headers(headers)
            .max_error_response_size(crate::net::MAX_ERROR_BODY_BYTES);
        let transport =
            StreamableHttpClientTransport::with_client(TracedHttp(http.clone()), config);
        let running = handler
            .serve(transport)
            .await
            .map_err(|e| redirect_hint(chain(&e)))?;
        return Ok(Session {
            running,
            pgid: None,
        });
    }
    let command = cfg.command.as_deref().unwrap_or_default();
    let mut cmd = tokio::process::Command::new(command);
    cmd.args(&cfg.args).kill_on_drop(true);
    child_env(&mut cmd, cfg);
    let (child, pgid, stderr) =
        stdio::spawn(&cfg.name, cmd).map_err(|e| format!("cannot start {command:?}: {e}"))?;
    if let Some(stderr) = stderr {
        tokio::spawn(log_stderr(cfg.name.clone(), stderr));
    }
    match handler.serve(child).await {
        Ok(running) => Ok(Session { running, pgid }),
        Err(e) => {
            kill_group(pgid);
            Err(format!("initialize failed: {e}"))
        }
    }
}

/// What a stdio server gets of reagent's environment unless `inherit_env = true`: the list
/// the official MCP SDKs (TypeScript and Python) pass by default. Everything else (provider
/// keys, `REAGENT_API_KEYS`, `DATABASE_URL`) would reach a third-party program, and through
/// a tool that prints its environment, the model.
pub const INHERITED_ENV: [&str; 6] = ["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"];

/// The child's environment: the minimal one (or all of reagent's with `inherit_env`), then
/// the server's configured `env`, which wins.
fn child_env(cmd: &mut tokio::process::Command, cfg: &McpServerConfig) {
    if !cfg.inherit_env {
        cmd.env_clear();
        for key in INHERITED_ENV {
            // As the SDKs do: a value starting with `()` is an exported shell function.
            match std::env::var_os(key) {
                Some(v) if !v.as_encoded_bytes().starts_with(b"()") => {
                    cmd.env(key, v);
                }
                _ => {}
            }
        }
    }
    cmd.envs(&cfg.env);
}

/// The server's stderr, line by line, into the log at debug level (bounded lines).
async fn log_stderr(server: String, stderr: tokio::process::ChildStderr) {
    let mut lines = BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let line: String = line.chars().take(1000).collect();
        tracing::debug!(server = %server, "mcp server stderr: {line}");
    }
}

/// SIGKILL to the whole process group of a stdio server (ignored when it is already gone).
#[allow(unsafe_code)] // killpg: libc, the transport owns the child and kills only its leader.
pub fn kill_group(pgid: Option<i32>) {
    if let Some(pgid) = pgid.filter(|p| *p > 1) {
        // SAFETY: killpg only sends a signal; a stale group id fails with ESRCH.
        unsafe {
            libc::killpg(pgid, libc::SIGKILL);
        }
    }
}

/// Every page of `tools/list`, as JSON tool objects.
pub async fn list_tools(peer: &Peer<RoleClient>, timeout: Duration) -> Result<Vec<Value>, String> {
    let mut tools = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let params = cursor
            .take()
            .map(|c| PaginatedRequestParams::default().with_cursor(Some(c)));
        let request = ClientRequest::ListToolsRequest(ListToolsRequest {
            method: Default::default(),
            params,
            extensions: Default::default(),
        });
        let page = request_json(peer, request, timeout)
            .await
            .map_err(describe)?;
        match page.get("tools").and_then(Value::as_array) {
            Some(list) => tools.extend(list.iter().cloned()),
            None => return Err("tools/list answered without a tools array".into()),
        }
        match page.get("nextCursor").and_then(Value::as_str) {
            Some(next) if !next.is_empty() => cursor = Some(next.to_string()),
            _ => return Ok(tools),
        }
    }
    Err(format!("tools/list had more than {MAX_PAGES} pages"))
}

/// One `tools/call`; on timeout rmcp sends `notifications/cancelled` before returning.
pub async fn call_tool(
    peer: &Peer<RoleClient>,
    tool: &str,
    arguments: serde_json::Map<String, Value>,
    timeout: Duration,
) -> Result<Value, ServiceError> {
    let params = CallToolRequestParams::new(tool.to_string()).with_arguments(arguments);
    let mut request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
    // The tool span's: rmcp's worker sends the request outside it (see `traced`).
    if let Some(tp) = crate::telemetry::propagation::current_traceparent() {
        request.extensions_mut().insert(TraceParent(tp));
    }
    request_json(peer, request, timeout).await
}

async fn request_json(
    peer: &Peer<RoleClient>,
    request: ClientRequest,
    timeout: Duration,
) -> Result<Value, ServiceError> {
    let handle = peer
        .send_request_with_option(request, PeerRequestOptions::with_timeout(timeout))
        .await?;
    let mut guard = CancelOnDrop {
        peer: Some(handle.peer.clone()),
        id: handle.id.clone(),
    };
    let result = handle.await_response().await;
    // Answered, timed out (rmcp sent the cancel) or closed: nothing left to cancel.
    guard.peer = None;
    serde_json::to_value(&result?).map_err(|_| ServiceError::UnexpectedResponse)
}

/// Sends `notifications/cancelled` when a request is abandoned before its end (the run was
/// cancelled or the engine gave up), so the server stops working on it.
struct CancelOnDrop {
    peer: Option<Peer<RoleClient>>,
    id: RequestId,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some(peer) = self.peer.take() else {
            return;
        };
        let params = CancelledNotificationParam::new(
            Some(self.id.clone()),
            Some("the caller stopped waiting".into()),
        );
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let _ = peer.notify_cancelled(params).await;
            });
        }
    }
}

/// An error with its causes: reqwest's own message alone ("error following redirect") hides
/// what went wrong.
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let part = s.to_string();
        if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        source = s.source();
    }
    text
}

/// rmcp's error hides the redirect policy's own message: say what the policy is.
fn redirect_hint(text: String) -> String {
    if text.contains("error following redirect") && !text.contains("another origin") {
        format!(
            "{text} (redirects are followed within the configured URL's origin only, at most \
             {} hops: a redirect to another origin is refused so that configured headers are \
             never sent there)",
            crate::net::MAX_REDIRECTS
        )
    } else {
        text
    }
}

/// A request error in words an operator can act on.
pub fn describe(e: ServiceError) -> String {
    describe_ref(&e)
}

pub fn describe_ref(e: &ServiceError) -> String {
    match e {
        ServiceError::TransportClosed => "the MCP server closed the connection".into(),
        ServiceError::Timeout { timeout } => {
            format!(
                "no answer from the MCP server within {} s",
                timeout.as_secs_f64()
            )
        }
        // An answer reagent could not read: the message says why, in full.
        ServiceError::McpError(e)
            if e.data.as_ref().and_then(|d| d.get("reagent"))
                == Some(&frame::UNREADABLE.into()) =>
        {
            e.message.to_string()
        }
        ServiceError::McpError(e) => format!(
            "the MCP server answered with error {}: {}",
            e.code.0, e.message
        ),
        other => other.to_string(),
    }
}
