//! The sections of the configuration (`[server]`, `[auth]`, `[llm]`, `[[models]]`, `[react]`,
//! `[tools]`) with their docs/configuration.md defaults, and [`Secret`], which keeps keys out of `Debug`.
//!
//! `[llm]` and `[[models]]` are in `sections/llm.rs`, `[react]` in `sections/react.rs`,
//! `[tools]` in `sections/tools.rs`.

use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;

use serde::Deserialize;

use super::DEFAULT_DATABASE_URL;
use crate::domain::constant_time_eq;

mod llm;
mod react;
mod tools;

pub use llm::{Api, LlmConfig, ModelConfig, Thinking};
pub use react::ReactConfig;
pub use tools::{HttpToolSpec, ToolsConfig};

/// A secret string (API key). Its `Debug` never shows the value, so configs can be logged.
#[derive(Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }
    /// The secret itself; call sites that need it are easy to grep for.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

/// `[server]`.
#[derive(Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerConfig {
    /// `REAGENT_BIND`.
    pub bind: SocketAddr,
    /// `DATABASE_URL`: `sqlite:` or `postgres:` URL. May hold a password: never logged as is.
    pub database_url: String,
    /// Larger request bodies get 413 (docs/api.md).
    pub max_body_bytes: usize,
    /// Longer queries and interrupts get 400 (docs/api.md).
    pub max_query_chars: usize,
    /// Decoded image bytes one run may hold and send (docs/api.md "Images"); the routes that
    /// take images accept bodies this much larger (as base64) than `max_body_bytes`.
    pub max_run_image_bytes: usize,
    /// Requests per API key per minute; unlimited when absent.
    pub rate_limit_per_minute: Option<u32>,
    /// `REAGENT_STATIC_DIR`: a folder to serve the browser UI from (docs/api.md, for UI
    /// development); `None` serves the files compiled into the binary.
    pub static_dir: Option<PathBuf>,
    /// Where the SQLite database and artifacts live by default.
    pub data_dir: PathBuf,
    /// How long shutdown waits for in-flight requests and runs before exiting anyway.
    pub shutdown_grace_s: u64,
    /// `REAGENT_HEADER_TIMEOUT_S`: time a client has to send a whole request head, from
    /// connect or from the end of the previous response (so also the keep-alive idle timeout).
    pub header_timeout_s: u64,
    /// `REAGENT_MAX_CONNECTIONS`: connections served normally; derived from the process's
    /// file-descriptor limit when absent.
    pub max_connections: Option<usize>,
    /// `REAGENT_SSE_STALL_S`: a connection whose client has not read what was sent for this
    /// long is closed (an SSE subscriber resumes with `Last-Event-ID`).
    pub sse_stall_s: u64,
    /// `REAGENT_RESUME_ON_RESTART`: runs a crash left `running` resume from their last
    /// checkpoint at start-up (docs/deployment.md); `false` fails them.
    pub resume_on_restart: bool,
    /// `REAGENT_INSTANCE_ID`: this process's name (host name, process id and a random suffix
    /// when absent).
    pub instance_id: Option<String>,
    /// `REAGENT_LEASE_TTL_S`: seconds after which a run whose lease was not renewed may be
    /// taken over by another instance (docs/deployment.md).
    pub lease_ttl_s: u64,
    /// `REAGENT_LEASE_RENEW_S`: seconds between two renewals of this instance's leases (and
    /// sweeps for lapsed ones); less than `lease_ttl_s`.
    pub lease_renew_s: u64,
    /// `REAGENT_OTEL_CAPTURE_CONTENT`: prompts, answers and tool arguments go on the trace's
    /// spans (off: they may hold personal data).
    #[serde(skip)]
    pub otel_capture_content: bool,
    /// `REAGENT_TRACE_URL`: a link to a run's trace, `{trace_id}` replaced (the UI shows it).
    #[serde(skip)]
    pub trace_url: Option<String>,
    /// `REAGENT_LOG_FORMAT=json`: logs as JSON lines.
    #[serde(skip)]
    pub log_json: bool,
    /// Runs one tenant may have going at once; more get 429 `too_many_active_runs`.
    pub max_active_runs_per_tenant: Option<u32>,
    /// `REAGENT_CORS_ORIGINS`: browser origins (`scheme://host[:port]`, or `*`) whose pages may
    /// call the front-end routes (`/ag-ui`, `/ai-sdk`) across origins; none by default.
    pub cors_origins: Vec<String>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            bind: SocketAddr::from(([127, 0, 0, 1], 8080)),
            database_url: DEFAULT_DATABASE_URL.into(),
            max_body_bytes: 1024 * 1024,
            max_query_chars: 100_000,
            max_run_image_bytes: 20 * 1024 * 1024,
            rate_limit_per_minute: None,
            static_dir: None,
            data_dir: "data".into(),
            shutdown_grace_s: 10,
            header_timeout_s: 30,
            max_connections: None,
            sse_stall_s: 60,
            resume_on_restart: true,
            instance_id: None,
            lease_ttl_s: 20,
            lease_renew_s: 5,
            otel_capture_content: false,
            trace_url: None,
            log_json: false,
            max_active_runs_per_tenant: None,
            cors_origins: Vec::new(),
        }
    }
}

impl fmt::Debug for ServerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerConfig")
            .field("bind", &self.bind)
            .field("database_url", &redact_url(&self.database_url))
            .field("max_body_bytes", &self.max_body_bytes)
            .field("max_query_chars", &self.max_query_chars)
            .field("max_run_image_bytes", &self.max_run_image_bytes)
            .field("rate_limit_per_minute", &self.rate_limit_per_minute)
            .field("static_dir", &self.static_dir)
            .field("data_dir", &self.data_dir)
            .field("shutdown_grace_s", &self.shutdown_grace_s)
            .field("header_timeout_s", &self.header_timeout_s)
            .field("max_connections", &self.max_connections)
            .field("sse_stall_s", &self.sse_stall_s)
            .field("resume_on_restart", &self.resume_on_restart)
            .field("instance_id", &self.instance_id)
            .field("lease_ttl_s", &self.lease_ttl_s)
            .field("lease_renew_s", &self.lease_renew_s)
            .field(
                "max_active_runs_per_tenant",
                &self.max_active_runs_per_tenant,
            )
            .field("cors_origins", &self.cors_origins)
            .finish()
    }
}

/// Replaces the password of a URL (`postgres://user:pw@host/db`) with `***`.
pub fn redact_url(raw: &str) -> String {
    match url::Url::parse(raw) {
        Ok(mut u) if u.password().is_some() => {
            // Cannot fail: the URL already has a password, hence an authority.
            let _ = u.set_password(Some("***"));
            u.to_string()
        }
        _ => raw.to_string(),
    }
}

/// `[auth]` (docs/api.md). Auth is on when `keys` is non-empty.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AuthConfig {
    /// `REAGENT_API_KEYS` replaces this list when set.
    pub keys: Vec<ApiKey>,
    /// A separate bearer key for `/metrics`; public when absent.
    pub metrics_key: Option<Secret>,
}

/// One API key; `name` is the tenant that owns conversations and runs.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApiKey {
    pub name: String,
    pub key: Secret,
}

impl AuthConfig {
    pub fn enabled(&self) -> bool {
        !self.keys.is_empty()
    }
    /// The tenant name owning `key`, if any. Like the server's key check, compares in
    /// constant time against every key (no early exit), so timing reveals no prefix.
    pub fn tenant_for(&self, key: &str) -> Option<&str> {
        let mut found = None;
        for k in &self.keys {
            let same = constant_time_eq(k.key.expose().as_bytes(), key.as_bytes());
            if same && found.is_none() {
                found = Some(k.name.as_str());
            }
        }
        found
    }
}
