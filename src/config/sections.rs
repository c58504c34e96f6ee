//! The sections of the configuration (`[server]`, `[auth]`, `[llm]`, `[[models]]`, `[react]`,
//! `[tools]`) with their SPEC §6 defaults, and [`Secret`], which keeps keys out of `Debug`.

use std::collections::BTreeMap;
use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;

use serde::{Deserialize, Deserializer};
use serde_json::Value;

use super::{DEFAULT_BASE_URL, DEFAULT_DATABASE_URL, DEFAULT_MODEL};
use crate::domain::{constant_time_eq, prompt_budget, Abilities, DEFAULT_LLM_MAX_RESPONSE_BYTES};

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
    /// Larger request bodies get 413 (SPEC §3.7).
    pub max_body_bytes: usize,
    /// Longer queries and interrupts get 400 (SPEC §3.7).
    pub max_query_chars: usize,
    /// Requests per API key per minute; unlimited when absent.
    pub rate_limit_per_minute: Option<u32>,
    /// `REAGENT_STATIC_DIR`: a folder to serve the browser UI from (SPEC §3.4, for UI
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
    /// checkpoint at start-up (SPEC §11); `false` fails them.
    pub resume_on_restart: bool,
    /// `REAGENT_INSTANCE_ID`: this process's name (host name, process id and a random suffix
    /// when absent).
    pub instance_id: Option<String>,
    /// `REAGENT_LEASE_TTL_S`: seconds after which a run whose lease was not renewed may be
    /// taken over by another instance (SPEC §11).
    pub lease_ttl_s: u64,
    /// `REAGENT_LEASE_RENEW_S`: seconds between two renewals of this instance's leases (and
    /// sweeps for lapsed ones); less than `lease_ttl_s`.
    pub lease_renew_s: u64,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            bind: SocketAddr::from(([127, 0, 0, 1], 8080)),
            database_url: DEFAULT_DATABASE_URL.into(),
            max_body_bytes: 1024 * 1024,
            max_query_chars: 100_000,
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

/// `[auth]` (SPEC §3.5). Auth is on when `keys` is non-empty.
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

/// `[llm]`: settings shared by every model.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LlmConfig {
    /// `LLM_TIMEOUT_S`: per-call timeout.
    pub timeout_s: u64,
    /// `LLM_MAX_RETRIES`: retries on 429/5xx/connect errors.
    pub max_retries: u32,
    /// `LLM_MAX_RESPONSE_BYTES`: the most one model response may send (a non-streamed body,
    /// or a whole stream), so a broken or hostile provider cannot exhaust memory.
    pub max_response_bytes: usize,
    /// `LLM_HTTP2`: HTTP/2 to the providers, so concurrent calls share one connection: with
    /// prior knowledge (h2c) to `http://` base URLs, by ALPN to `https://`. Off: HTTP/1.1.
    pub http2: bool,
}

impl Default for LlmConfig {
    fn default() -> Self {
        Self {
            timeout_s: 120,
            max_retries: 3,
            max_response_bytes: DEFAULT_LLM_MAX_RESPONSE_BYTES,
            http2: false,
        }
    }
}

/// One `[[models]]` entry, resolved (key looked up, defaults applied).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelConfig {
    /// The name clients use (`model` in requests, `GET /api/models`).
    pub name: String,
    #[serde(default = "default_base_url")]
    pub base_url: String,
    /// The environment variable holding this model's key.
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// The provider's model name; defaults to `name`.
    #[serde(default)]
    pub model: String,
    /// Missing abilities default to `true`.
    #[serde(default, deserialize_with = "partial_abilities")]
    pub abilities: Abilities,
    #[serde(default = "default_context_window")]
    pub context_window: u32,
    #[serde(default = "default_max_output_tokens")]
    pub max_output_tokens: u32,
    /// Free-form notes for users choosing a model ("fast", "vision"...).
    #[serde(default)]
    pub hints: Vec<String>,
    /// What DAG steps may ask this model for by `model_hint` (SPEC §9: `fast`, `reasoning`…).
    #[serde(default)]
    pub roles: Vec<String>,
    #[serde(default)]
    pub default: bool,
    /// Looked up at load time; never read from the file.
    #[serde(skip)]
    pub api_key: Option<Secret>,
}

impl ModelConfig {
    /// A model with the SPEC §6 defaults.
    pub fn new(name: impl Into<String>) -> Self {
        let name = name.into();
        Self {
            model: DEFAULT_MODEL.into(),
            name,
            base_url: DEFAULT_BASE_URL.into(),
            api_key_env: None,
            abilities: Abilities::default(),
            context_window: default_context_window(),
            max_output_tokens: default_max_output_tokens(),
            hints: Vec::new(),
            roles: Vec::new(),
            default: false,
            api_key: None,
        }
    }
}

fn default_base_url() -> String {
    DEFAULT_BASE_URL.into()
}
fn default_context_window() -> u32 {
    128_000
}
fn default_max_output_tokens() -> u32 {
    4_096
}

/// `abilities = { tool_call = false }` leaves the other abilities at `true`.
fn partial_abilities<'de, D: Deserializer<'de>>(d: D) -> Result<Abilities, D::Error> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Partial {
        tool_call: Option<bool>,
        json_mode: Option<bool>,
        tool_choice: Option<bool>,
    }
    let p = Partial::deserialize(d)?;
    Ok(Abilities {
        tool_call: p.tool_call.unwrap_or(true),
        json_mode: p.json_mode.unwrap_or(true),
        tool_choice: p.tool_choice.unwrap_or(true),
    })
}

/// `[react]`: the engine's knobs (SPEC §2).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ReactConfig {
    /// `REACT_MAX_ITERATIONS` (§2.4), at least 1.
    pub max_iterations: u32,
    /// `REACT_TOOL_SELECTION_THRESHOLD` (§2.5): select when more tools than this.
    pub tool_selection_threshold: u32,
    /// `REACT_TOOL_SELECTION_MAX` (§2.5), at least 1.
    pub tool_selection_max: u32,
    /// `REACT_SELF_REFLECTION_INTERVAL` (§2.7); 0 disables reflection.
    pub self_reflection_interval: u32,
    /// `REACT_CYCLE_DETECTION_THRESHOLD` (§2.8), at least 1.
    pub cycle_detection_threshold: u32,
    /// §2.9 on/off.
    pub completion_check: bool,
    /// `REACT_COMPLETION_CHECK_MIN_TOOLS` (§2.9).
    pub completion_check_min_tools: u32,
    /// `REACT_SYNTHESIS_TRUNCATION` (§2.12), characters per tool result, at least 1.
    pub synthesis_truncation: usize,
    /// `CONTEXT_BUDGET_TOKENS` (§2.10); absent means window − max output of the run's model.
    pub context_budget_tokens: Option<u32>,
    /// Per tool call timeout.
    pub tool_timeout_s: u64,
    /// A separate model (by name) for context compaction (§2.1).
    pub compact_model: Option<String>,
    /// Allow native function calling when the model can (§2.2).
    pub use_native_tools: bool,
}

impl Default for ReactConfig {
    fn default() -> Self {
        Self {
            max_iterations: 50,
            tool_selection_threshold: 12,
            tool_selection_max: 6,
            self_reflection_interval: 6,
            cycle_detection_threshold: 3,
            completion_check: true,
            completion_check_min_tools: 3,
            synthesis_truncation: 2000,
            context_budget_tokens: None,
            tool_timeout_s: 60,
            compact_model: None,
            use_native_tools: true,
        }
    }
}

impl ReactConfig {
    /// The context budget for a run on a model with these limits (§2.10).
    pub fn context_budget_for(&self, context_window: u32, max_output_tokens: u32) -> u32 {
        self.context_budget_tokens
            .unwrap_or_else(|| prompt_budget(context_window, max_output_tokens))
    }
}

/// One `[[tools.http]]` entry, exactly as written in `config.toml`.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct HttpToolSpec {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments (an object schema).
    #[serde(default = "empty_object_schema")]
    pub parameters: Value,
    pub url: String,
    #[serde(default = "default_method")]
    pub method: String,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    #[serde(default = "default_timeout_s")]
    pub timeout_s: u64,
    #[serde(default)]
    pub writes: bool,
    #[serde(default)]
    pub requires_approval: bool,
    /// Safe to repeat: a call in flight when its instance stopped is run again on resume
    /// instead of answered as interrupted (SPEC §11).
    #[serde(default)]
    pub idempotent: bool,
}

fn empty_object_schema() -> Value {
    serde_json::json!({"type": "object", "properties": {}})
}
fn default_method() -> String {
    "POST".into()
}
fn default_timeout_s() -> u64 {
    30
}

/// `[tools]`. `Debug` shows HTTP tools without their header values (often credentials).
#[derive(Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ToolsConfig {
    /// `REAGENT_HTTP_ALLOW_PRIVATE`: let `http_request` reach private/loopback addresses.
    pub allow_private_http: bool,
    /// Response size cap of `http_request` and HTTP tools.
    pub http_max_response_bytes: usize,
    /// `[[tools.http]]`.
    pub http: Vec<HttpToolSpec>,
}

impl Default for ToolsConfig {
    fn default() -> Self {
        Self {
            allow_private_http: false,
            http_max_response_bytes: 1024 * 1024,
            http: Vec::new(),
        }
    }
}

impl fmt::Debug for ToolsConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let http: Vec<String> = self
            .http
            .iter()
            .map(|t| {
                let headers: Vec<&str> = t.headers.keys().map(String::as_str).collect();
                format!(
                    "{} {} {} headers [{}]",
                    t.name,
                    t.method,
                    t.url,
                    headers.join(", ")
                )
            })
            .collect();
        f.debug_struct("ToolsConfig")
            .field("allow_private_http", &self.allow_private_http)
            .field("http_max_response_bytes", &self.http_max_response_bytes)
            .field("http", &http)
            .finish()
    }
}
