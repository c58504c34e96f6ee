//! `[[a2a]]` (docs/protocols.md): one entry per remote A2A agent that the agents may call as a
//! tool named `name` with the arguments `{message}`. Checked at start-up with errors naming
//! the key; `headers` values are `${VAR}`-expanded after the check, and `Debug` shows their
//! names only, since they usually hold credentials.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;

use reqwest::header::{HeaderName, HeaderValue};
use serde::Deserialize;

use super::expand::expand_map;
use super::validate::{at_least, http_url};
use super::ConfigError;

/// One `[[a2a]]` entry.
#[derive(Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct A2aAgentConfig {
    /// The tool's name: `[A-Za-z0-9_-]{1,64}`, unique among all tools.
    pub name: String,
    /// The agent's base URL (its card is `<url>/.well-known/agent-card.json`), or the URL of
    /// its card when it ends in `.json`.
    pub url: String,
    /// What the model reads about the tool; a generic line naming the agent when absent.
    #[serde(default)]
    pub description: Option<String>,
    /// Sent with every request to the agent (values `${VAR}`-expanded), never to another origin.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Bounds one call, the remote's whole task included.
    #[serde(default = "default_timeout_s")]
    pub timeout_s: u64,
}

fn default_timeout_s() -> u64 {
    120
}

impl fmt::Debug for A2aAgentConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("A2aAgentConfig")
            .field("name", &self.name)
            .field("url", &self.url)
            .field("description", &self.description)
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .field("timeout_s", &self.timeout_s)
            .finish()
    }
}

/// Checks every entry as written; errors name the key (`a2a[1].url`).
pub(super) fn validate(agents: &[A2aAgentConfig]) -> Result<(), ConfigError> {
    let mut names = HashSet::new();
    for (i, a) in agents.iter().enumerate() {
        let key = |field: &str| format!("a2a[{i}].{field}");
        let name_ok = (1..=64).contains(&a.name.len())
            && a.name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !name_ok {
            return Err(ConfigError::value(
                key("name"),
                &a.name,
                "expected 1 to 64 of A-Z, a-z, 0-9, '_' or '-' (it is the tool's name)",
            ));
        }
        if !names.insert(a.name.as_str()) {
            return Err(ConfigError::invalid(
                key("name"),
                format!("duplicate A2A agent name {:?}", a.name),
            ));
        }
        http_url(&key("url"), &a.url)?;
        let has_credentials = url::Url::parse(&a.url)
            .is_ok_and(|u| !u.username().is_empty() || u.password().is_some());
        if has_credentials {
            return Err(ConfigError::invalid(
                key("url"),
                "must not carry user:password@; send an Authorization header in `headers`",
            ));
        }
        if a.description
            .as_deref()
            .is_some_and(|d| d.trim().is_empty())
        {
            return Err(ConfigError::invalid(
                key("description"),
                "must not be empty",
            ));
        }
        at_least(&key("timeout_s"), a.timeout_s, 1)?;
        for name in a.headers.keys() {
            if HeaderName::from_bytes(name.as_bytes()).is_err() {
                return Err(ConfigError::value(
                    key("headers"),
                    name,
                    "a valid header name",
                ));
            }
        }
    }
    Ok(())
}

/// Expands `${VAR}` in every entry's `headers`, then checks the values are sendable.
pub(super) fn expand(
    agents: &mut [A2aAgentConfig],
    env: &HashMap<String, String>,
) -> Result<(), ConfigError> {
    for (i, a) in agents.iter_mut().enumerate() {
        let key = format!("a2a[{i}].headers");
        expand_map(&key, &mut a.headers, env)?;
        for (name, value) in &a.headers {
            if HeaderValue::from_str(value).is_err() {
                return Err(ConfigError::invalid(
                    format!("{key}.{name}"),
                    "the value is not a valid header value",
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
