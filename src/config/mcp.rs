//! `[[mcp]]` (docs/protocols.md): one entry per MCP tool server, over stdio (`command`, `args`, `env`)
//! or streamable HTTP (`url`, `headers`). Checked at start-up with errors naming the key;
//! `env`/`headers` values are `${VAR}`-expanded after the check, and `Debug` shows their names
//! only, since they usually hold credentials.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;

use globset::Glob;
use serde::Deserialize;

use super::expand::expand_map;
use super::validate::{at_least, http_url};
use super::ConfigError;

/// One `[[mcp]]` entry.
#[derive(Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerConfig {
    /// `[a-z0-9_-]{1,32}`, unique; prefixes its tools (`<name>__<tool>`).
    pub name: String,
    /// stdio transport: the program reagent starts.
    #[serde(default)]
    pub command: Option<String>,
    #[serde(default)]
    pub args: Vec<String>,
    /// Extra environment of the child (values `${VAR}`-expanded).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// stdio only: start the child with reagent's whole environment instead of the minimal
    /// one (`HOME`, `LOGNAME`, `PATH`, `SHELL`, `TERM`, `USER`) plus `env`. Off by default:
    /// reagent's environment holds its provider keys, API keys and database URL.
    #[serde(default)]
    pub inherit_env: bool,
    /// streamable HTTP transport: the endpoint.
    #[serde(default)]
    pub url: Option<String>,
    /// Sent with every request (values `${VAR}`-expanded).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Per call.
    #[serde(default = "default_timeout_s")]
    pub timeout_s: u64,
    /// Allow-list of globs on the server's own tool names; all tools when empty.
    #[serde(default)]
    pub tools: Vec<String>,
    /// Globs of tools that write (the `read_only` hook blocks them).
    #[serde(default)]
    pub writes: Vec<String>,
    /// Globs of tools the `approval` hook pauses on.
    #[serde(default)]
    pub requires_approval: Vec<String>,
    /// `/readyz` waits for this server to be ready.
    #[serde(default)]
    pub required: bool,
}

fn default_timeout_s() -> u64 {
    60
}

impl McpServerConfig {
    /// `"stdio"` or `"http"`.
    pub fn transport(&self) -> &'static str {
        if self.url.is_some() {
            "http"
        } else {
            "stdio"
        }
    }
}

impl fmt::Debug for McpServerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpServerConfig")
            .field("name", &self.name)
            .field("command", &self.command)
            .field("args", &self.args)
            .field("env", &self.env.keys().collect::<Vec<_>>())
            .field("inherit_env", &self.inherit_env)
            .field("url", &self.url)
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .field("timeout_s", &self.timeout_s)
            .field("tools", &self.tools)
            .field("writes", &self.writes)
            .field("requires_approval", &self.requires_approval)
            .field("required", &self.required)
            .finish()
    }
}

/// Checks every entry as written; errors name the key (`mcp[1].url`).
pub(super) fn validate(servers: &[McpServerConfig]) -> Result<(), ConfigError> {
    let mut names = HashSet::new();
    for (i, s) in servers.iter().enumerate() {
        let key = |field: &str| format!("mcp[{i}].{field}");
        let name_ok = (1..=32).contains(&s.name.len())
            && s.name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-');
        if !name_ok {
            return Err(ConfigError::value(
                key("name"),
                &s.name,
                "expected 1 to 32 of a-z, 0-9, '_' or '-'",
            ));
        }
        if !names.insert(s.name.as_str()) {
            return Err(ConfigError::invalid(
                key("name"),
                format!("duplicate MCP server name {:?}", s.name),
            ));
        }
        match (&s.command, &s.url) {
            (Some(_), Some(_)) => {
                return Err(ConfigError::invalid(
                    key("url"),
                    "give either command (stdio) or url (streamable HTTP), not both",
                ))
            }
            (None, None) => {
                return Err(ConfigError::invalid(
                    key("command"),
                    "an MCP server needs a command (stdio) or a url (streamable HTTP)",
                ))
            }
            (Some(c), None) if c.trim().is_empty() => {
                return Err(ConfigError::invalid(key("command"), "must not be empty"))
            }
            (None, Some(url)) => http_url(&key("url"), url)?,
            _ => {}
        }
        if s.url.is_some() && (!s.args.is_empty() || !s.env.is_empty()) {
            return Err(ConfigError::invalid(
                key("args"),
                "args and env apply to a stdio server (command), not to url",
            ));
        }
        if s.url.is_some() && s.inherit_env {
            return Err(ConfigError::invalid(
                key("inherit_env"),
                "inherit_env applies to a stdio server (command), not to url",
            ));
        }
        if s.command.is_some() && !s.headers.is_empty() {
            return Err(ConfigError::invalid(
                key("headers"),
                "headers apply to a streamable HTTP server (url), not to command",
            ));
        }
        at_least(&key("timeout_s"), s.timeout_s, 1)?;
        for (field, globs) in [
            ("tools", &s.tools),
            ("writes", &s.writes),
            ("requires_approval", &s.requires_approval),
        ] {
            for (j, g) in globs.iter().enumerate() {
                Glob::new(g).map_err(|e| {
                    ConfigError::value(format!("mcp[{i}].{field}[{j}]"), g, &e.to_string())
                })?;
            }
        }
    }
    Ok(())
}

/// Expands `${VAR}` in every entry's `env` and `headers`.
pub(super) fn expand(
    servers: &mut [McpServerConfig],
    env: &HashMap<String, String>,
) -> Result<(), ConfigError> {
    for (i, s) in servers.iter_mut().enumerate() {
        expand_map(&format!("mcp[{i}].env"), &mut s.env, env)?;
        expand_map(&format!("mcp[{i}].headers"), &mut s.headers, env)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
