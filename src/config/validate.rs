//! Validation. `file` checks what the file says under the file's key names (`models[1].base_url`,
//! `react.max_iterations`) before the environment is applied; `config` checks the cross
//! references of the merged result. Every error names the key and, unless it is a secret, the
//! value.

use std::collections::HashSet;
use std::fmt::Debug;

use super::{Config, ConfigError, FileConfig};

/// The wording used for every integer setting, file or environment.
pub(super) fn integer_expectation<T: PartialOrd + From<u8>>(min: T) -> &'static str {
    if min >= T::from(1) {
        "expected a positive integer"
    } else {
        "expected a non-negative integer"
    }
}

/// Names taken by the built-in tools (docs/configuration.md); an HTTP tool cannot shadow them.
const BUILTIN_TOOLS: &[&str] = &["calculator", "current_time", "http_request"];
const MIN_SYNTHESIS_BYTES: usize = 1024;
const HTTP_METHODS: &[&str] = &["GET", "POST", "PUT", "PATCH", "DELETE"];

pub(super) fn database_url(key: &str, raw: &str) -> Result<(), ConfigError> {
    let ok = ["sqlite:", "postgres:", "postgresql:"]
        .iter()
        .any(|p| raw.starts_with(p));
    if ok {
        Ok(())
    } else {
        // Not echoed whole: a postgres URL may carry a password.
        Err(ConfigError::value(
            key,
            super::redact_url(raw),
            "expected a sqlite: or postgres: URL",
        ))
    }
}

pub(super) fn http_url(key: &str, raw: &str) -> Result<(), ConfigError> {
    match url::Url::parse(raw) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.has_host() => Ok(()),
        _ => Err(ConfigError::invalid(
            key,
            format!("{raw:?} is not an http(s) URL"),
        )),
    }
}

pub(super) fn at_least<T: PartialOrd + Copy + Debug + From<u8>>(
    key: &str,
    v: T,
    min: T,
) -> Result<(), ConfigError> {
    if v >= min {
        Ok(())
    } else {
        Err(ConfigError::value(key, v, integer_expectation(min)))
    }
}

/// The synthesis trace needs room for the question, a step and the draft: at least 1 KiB.
pub(super) fn synthesis_max_bytes(key: &str, n: usize) -> Result<(), ConfigError> {
    if n >= MIN_SYNTHESIS_BYTES {
        Ok(())
    } else {
        Err(ConfigError::value(
            key,
            n,
            "expected at least 1024 (bytes of the synthesis trace)",
        ))
    }
}

/// OpenAI function names: `^[A-Za-z0-9_-]{1,64}$`.
fn tool_name(key: &str, name: &str) -> Result<(), ConfigError> {
    let ok = (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if ok {
        Ok(())
    } else {
        Err(ConfigError::value(
            key,
            name,
            "expected 1 to 64 letters, digits, '_' or '-'",
        ))
    }
}

pub(super) fn file(f: &FileConfig) -> Result<(), ConfigError> {
    let s = &f.server;
    database_url("server.database_url", &s.database_url)?;
    at_least("server.max_body_bytes", s.max_body_bytes, 1)?;
    at_least("server.max_query_chars", s.max_query_chars, 1)?;
    at_least("server.max_run_image_bytes", s.max_run_image_bytes, 1)?;
    at_least("server.header_timeout_s", s.header_timeout_s, 1)?;
    at_least("server.sse_stall_s", s.sse_stall_s, 1)?;
    if let Some(n) = s.max_connections {
        at_least("server.max_connections", n, 1)?;
    }
    if let Some(n) = s.rate_limit_per_minute {
        at_least("server.rate_limit_per_minute", n, 1)?;
    }
    if let Some(n) = s.max_active_runs_per_tenant {
        at_least("server.max_active_runs_per_tenant", n, 1)?;
    }
    for origin in &s.cors_origins {
        cors_origin("server.cors_origins", origin)?;
    }
    for (i, k) in f.auth.keys.iter().enumerate() {
        if k.name.trim().is_empty() || k.key.expose().trim().is_empty() {
            return Err(ConfigError::invalid(
                format!("auth.keys[{i}]"),
                "name and key must be non-empty",
            ));
        }
    }
    at_least("llm.timeout_s", f.llm.timeout_s, 1)?;
    at_least("llm.max_response_bytes", f.llm.max_response_bytes, 1)?;

    let r = &f.react;
    at_least("react.max_iterations", r.max_iterations, 1)?;
    at_least("react.tool_selection_max", r.tool_selection_max, 1)?;
    at_least(
        "react.cycle_detection_threshold",
        r.cycle_detection_threshold,
        1,
    )?;
    at_least("react.synthesis_truncation", r.synthesis_truncation, 1)?;
    at_least("react.tool_timeout_s", r.tool_timeout_s, 1)?;
    if let Some(n) = r.context_budget_tokens {
        at_least("react.context_budget_tokens", n, 1)?;
    }
    at_least(
        "react.max_tool_calls_per_reply",
        r.max_tool_calls_per_reply,
        1,
    )?;
    at_least("react.max_tool_calls_per_run", r.max_tool_calls_per_run, 1)?;
    at_least(
        "react.max_tool_arguments_bytes",
        r.max_tool_arguments_bytes,
        1,
    )?;
    synthesis_max_bytes("react.synthesis_max_bytes", r.synthesis_max_bytes)?;
    at_least("tools.max_concurrent", f.tools.max_concurrent, 1)?;
    at_least(
        "tools.max_concurrent_per_run",
        f.tools.max_concurrent_per_run,
        1,
    )?;
    at_least(
        "tools.http_max_response_bytes",
        f.tools.http_max_response_bytes,
        1,
    )?;

    models(f)?;
    http_tools(f)
}

fn models(f: &FileConfig) -> Result<(), ConfigError> {
    let mut names = HashSet::new();
    for (i, m) in f.models.iter().enumerate() {
        let key = |field: &str| format!("models[{i}].{field}");
        if m.name.trim().is_empty() {
            return Err(ConfigError::invalid(key("name"), "must be non-empty"));
        }
        if !names.insert(m.name.as_str()) {
            return Err(ConfigError::invalid(
                key("name"),
                format!("duplicate model name {:?}", m.name),
            ));
        }
        http_url(&key("base_url"), &m.base_url)?;
        if m.api_key_env
            .as_deref()
            .is_some_and(|v| v.trim().is_empty())
        {
            return Err(ConfigError::invalid(
                key("api_key_env"),
                "must name a variable",
            ));
        }
        at_least(&key("context_window"), m.context_window, 1)?;
        at_least(&key("max_output_tokens"), m.max_output_tokens, 1)?;
        // Anthropic refuses a smaller thinking budget; say so at start-up, not on the first call.
        if let Some(t) = m.thinking {
            at_least(&key("thinking.budget_tokens"), t.budget_tokens, 1024)?;
        }
        // A mistyped price fails start-up rather than block or undercharge anyone.
        if let Some((field, v)) = m.price.as_ref().and_then(|p| p.invalid_field()) {
            return Err(ConfigError::value(
                key(&format!("price.{field}")),
                v,
                "expected a finite number ≥ 0 (USD per million tokens)",
            ));
        }
    }
    Ok(())
}

fn http_tools(f: &FileConfig) -> Result<(), ConfigError> {
    let mut names = HashSet::new();
    for (i, t) in f.tools.http.iter().enumerate() {
        let key = |field: &str| format!("tools.http[{i}].{field}");
        tool_name(&key("name"), &t.name)?;
        if BUILTIN_TOOLS.contains(&t.name.as_str()) {
            return Err(ConfigError::invalid(
                key("name"),
                format!("{:?} is a built-in tool", t.name),
            ));
        }
        if !names.insert(t.name.as_str()) {
            return Err(ConfigError::invalid(
                key("name"),
                format!("duplicate tool name {:?}", t.name),
            ));
        }
        if t.description.trim().is_empty() {
            return Err(ConfigError::invalid(
                key("description"),
                "must be non-empty",
            ));
        }
        http_url(&key("url"), &t.url)?;
        if !HTTP_METHODS.contains(&t.method.to_ascii_uppercase().as_str()) {
            return Err(ConfigError::value(
                key("method"),
                &t.method,
                "expected GET, POST, PUT, PATCH or DELETE",
            ));
        }
        if !t.parameters.is_object() {
            return Err(ConfigError::invalid(
                key("parameters"),
                "must be a JSON Schema object",
            ));
        }
        at_least(&key("timeout_s"), t.timeout_s, 1)?;
    }
    Ok(())
}

/// Cross references that only make sense once the environment is applied.
pub(super) fn config(c: &Config) -> Result<(), ConfigError> {
    if let Some(name) = &c.react.compact_model {
        if !c.models.iter().any(|m| &m.name == name) {
            return Err(ConfigError::invalid(
                "react.compact_model",
                format!("{name:?} is not a configured model"),
            ));
        }
    }
    let (ttl, renew) = (c.server.lease_ttl_s, c.server.lease_renew_s);
    if renew == 0 || renew >= ttl {
        return Err(ConfigError::invalid(
            "server.lease_renew_s",
            format!("must be at least 1 and less than server.lease_ttl_s ({ttl}), not {renew}"),
        ));
    }
    let mut seen = HashSet::new();
    for k in &c.auth.keys {
        if !seen.insert(k.key.expose()) {
            return Err(ConfigError::invalid(
                "auth.keys",
                format!(
                    "the key of {:?} is used twice; each key must identify one tenant",
                    k.name
                ),
            ));
        }
    }
    Ok(())
}

/// `*`, or an origin exactly as a browser sends it (`scheme://host[:port]`, no path or slash).
pub(super) fn cors_origin(key: &str, origin: &str) -> Result<(), ConfigError> {
    let exact = url::Url::parse(origin)
        .ok()
        .filter(|u| matches!(u.scheme(), "http" | "https"))
        .is_some_and(|u| u.origin().ascii_serialization() == origin);
    if origin == "*" || exact {
        return Ok(());
    }
    Err(ConfigError::value(
        key,
        origin,
        "expected * or an origin such as http://localhost:8000 (no path, no trailing slash)",
    ))
}
