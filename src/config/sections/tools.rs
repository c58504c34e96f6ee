//! `[tools]` and its `[[tools.http]]` entries; `Debug` keeps header values out of logs.

use std::collections::BTreeMap;
use std::fmt;

use serde::Deserialize;
use serde_json::Value;

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
    /// instead of answered as interrupted (docs/deployment.md).
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
    /// `REAGENT_MAX_CONCURRENT_TOOLS`, at least 1: tool calls executing at once in the whole
    /// process; more wait for a slot (file descriptors and the event loop stay free).
    pub max_concurrent: usize,
    /// `REAGENT_MAX_CONCURRENT_TOOLS_PER_RUN`, at least 1: tool calls executing at once in one
    /// run (all of a DAG run's steps together).
    pub max_concurrent_per_run: usize,
}

impl Default for ToolsConfig {
    fn default() -> Self {
        Self {
            allow_private_http: false,
            http_max_response_bytes: 1024 * 1024,
            http: Vec::new(),
            max_concurrent: 64,
            max_concurrent_per_run: 8,
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
