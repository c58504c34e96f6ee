//! placeholder (helper D): HTTP tools declared in `[[tools.http]]` (SPEC §6).
use std::collections::BTreeMap;

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
