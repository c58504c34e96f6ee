//! The environment layer: every docs/configuration.md variable except the `LLM_*` model variables (see
//! `models`) overrides its file setting here. Each value is checked as it is read so that the
//! error names the variable, not the file key it replaces.
//!
//! An empty (or blank) variable counts as unset: `FOO=` in a compose file or a shell script
//! should not turn into a parse error.

use std::collections::HashMap;
use std::fmt::Debug;
use std::net::SocketAddr;
use std::str::FromStr;

use super::{validate, ApiKey, ConfigError, FileConfig, LlmConfig, ReactConfig, Secret};

/// The variable's trimmed value, `None` when unset or blank.
pub(super) fn get<'a>(env: &'a HashMap<String, String>, key: &str) -> Option<&'a str> {
    env.get(key).map(|v| v.trim()).filter(|v| !v.is_empty())
}

/// An integer of at least `min` (`min` is 0 or 1 in practice).
pub(super) fn int<T>(
    env: &HashMap<String, String>,
    key: &str,
    min: T,
) -> Result<Option<T>, ConfigError>
where
    T: FromStr + PartialOrd + Copy + Debug + From<u8>,
{
    let Some(raw) = get(env, key) else {
        return Ok(None);
    };
    match raw.parse::<T>() {
        Ok(v) if v >= min => Ok(Some(v)),
        _ => Err(ConfigError::value(
            key,
            raw,
            validate::integer_expectation(min),
        )),
    }
}

/// `true`/`false` (also `1`/`0`, `yes`/`no`, `on`/`off`, any case).
pub(super) fn boolean(
    env: &HashMap<String, String>,
    key: &str,
) -> Result<Option<bool>, ConfigError> {
    let Some(raw) = get(env, key) else {
        return Ok(None);
    };
    match raw.to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Ok(Some(true)),
        "false" | "0" | "no" | "off" => Ok(Some(false)),
        _ => Err(ConfigError::value(key, raw, "expected true or false")),
    }
}

/// `name:key,name:key`. Entries are never echoed in errors: they hold secrets.
pub(super) fn api_keys(raw: &str) -> Result<Vec<ApiKey>, ConfigError> {
    let mut keys = Vec::new();
    for (i, entry) in raw.split(',').map(str::trim).enumerate() {
        if entry.is_empty() {
            continue;
        }
        let Some((name, key)) = entry.split_once(':') else {
            return Err(ConfigError::invalid(
                "REAGENT_API_KEYS",
                format!(
                    "entry {} is not of the form name:key (value not shown: it is a secret)",
                    i + 1
                ),
            ));
        };
        let (name, key) = (name.trim(), key.trim());
        if name.is_empty() || key.is_empty() {
            return Err(ConfigError::invalid(
                "REAGENT_API_KEYS",
                format!("entry {} has an empty name or key", i + 1),
            ));
        }
        keys.push(ApiKey {
            name: name.to_string(),
            key: Secret::new(key),
        });
    }
    Ok(keys)
}

/// Applies the server, auth, `[llm]`, `[react]` and `[tools]` variables.
pub(super) fn apply(
    file: &mut FileConfig,
    env: &HashMap<String, String>,
) -> Result<(), ConfigError> {
    apply_server(file, env)?;
    apply_limits(file, env)?;
    apply_llm(&mut file.llm, env)?;
    apply_react(&mut file.react, env)
}

/// Where to listen, the database, the UI folder and the API keys.
fn apply_server(file: &mut FileConfig, env: &HashMap<String, String>) -> Result<(), ConfigError> {
    if let Some(raw) = get(env, "REAGENT_BIND") {
        file.server.bind = raw.parse::<SocketAddr>().map_err(|_| {
            ConfigError::value(
                "REAGENT_BIND",
                raw,
                "expected a socket address such as 127.0.0.1:8080",
            )
        })?;
    }
    if let Some(raw) = get(env, "DATABASE_URL") {
        validate::database_url("DATABASE_URL", raw)?;
        file.server.database_url = raw.to_string();
    }
    if let Some(raw) = get(env, "REAGENT_STATIC_DIR") {
        file.server.static_dir = Some(raw.into());
    }
    if let Some(raw) = get(env, "REAGENT_CORS_ORIGINS") {
        let origins: Vec<&str> = raw.split(',').map(str::trim).collect();
        for origin in origins.iter().filter(|o| !o.is_empty()) {
            validate::cors_origin("REAGENT_CORS_ORIGINS", origin)?;
        }
        file.server.cors_origins = origins
            .into_iter()
            .filter(|o| !o.is_empty())
            .map(str::to_string)
            .collect();
    }
    if let Some(raw) = get(env, "REAGENT_API_KEYS") {
        file.auth.keys = api_keys(raw)?;
    }
    if let Some(v) = boolean(env, "REAGENT_HTTP_ALLOW_PRIVATE")? {
        file.tools.allow_private_http = v;
    }
    set(
        &mut file.tools.max_concurrent,
        int(env, "REAGENT_MAX_CONCURRENT_TOOLS", 1)?,
    );
    set(
        &mut file.tools.max_concurrent_per_run,
        int(env, "REAGENT_MAX_CONCURRENT_TOOLS_PER_RUN", 1)?,
    );
    if let Some(raw) = get(env, "REAGENT_INSTANCE_ID") {
        file.server.instance_id = Some(raw.to_string());
    }
    apply_observability(file, env)
}

/// Tracing and log settings of reagent's own (the `OTEL_*` ones are the OpenTelemetry SDK's).
fn apply_observability(
    file: &mut FileConfig,
    env: &HashMap<String, String>,
) -> Result<(), ConfigError> {
    let s = &mut file.server;
    set(
        &mut s.otel_capture_content,
        boolean(env, "REAGENT_OTEL_CAPTURE_CONTENT")?,
    );
    if let Some(raw) = get(env, "REAGENT_TRACE_URL") {
        if !raw.contains("{trace_id}") {
            return Err(ConfigError::value(
                "REAGENT_TRACE_URL",
                raw,
                "expected a URL template with {trace_id} in it",
            ));
        }
        s.trace_url = Some(raw.to_string());
    }
    if let Some(raw) = get(env, "REAGENT_LOG_FORMAT") {
        s.log_json = match raw.to_ascii_lowercase().as_str() {
            "json" => true,
            "text" => false,
            _ => {
                return Err(ConfigError::value(
                    "REAGENT_LOG_FORMAT",
                    raw,
                    "expected json or text",
                ))
            }
        };
    }
    Ok(())
}

/// Connection limits, shutdown and the run leases.
fn apply_limits(file: &mut FileConfig, env: &HashMap<String, String>) -> Result<(), ConfigError> {
    let s = &mut file.server;
    set(
        &mut s.header_timeout_s,
        int(env, "REAGENT_HEADER_TIMEOUT_S", 1)?,
    );
    set(&mut s.sse_stall_s, int(env, "REAGENT_SSE_STALL_S", 1)?);
    if let Some(n) = int(env, "REAGENT_MAX_CONNECTIONS", 1)? {
        s.max_connections = Some(n);
    }
    set(
        &mut s.shutdown_grace_s,
        int(env, "REAGENT_SHUTDOWN_GRACE_S", 0)?,
    );
    if let Some(v) = boolean(env, "REAGENT_RESUME_ON_RESTART")? {
        s.resume_on_restart = v;
    }
    set(&mut s.lease_ttl_s, int(env, "REAGENT_LEASE_TTL_S", 2)?);
    set(&mut s.lease_renew_s, int(env, "REAGENT_LEASE_RENEW_S", 1)?);
    Ok(())
}

/// `[llm]`: the client settings every model shares.
fn apply_llm(llm: &mut LlmConfig, env: &HashMap<String, String>) -> Result<(), ConfigError> {
    set(&mut llm.timeout_s, int(env, "LLM_TIMEOUT_S", 1)?);
    set(&mut llm.max_retries, int(env, "LLM_MAX_RETRIES", 0)?);
    set(
        &mut llm.max_response_bytes,
        int(env, "LLM_MAX_RESPONSE_BYTES", 1)?,
    );
    set(&mut llm.http2, boolean(env, "LLM_HTTP2")?);
    Ok(())
}

/// `[react]`: the engine's safeguards and budgets.
fn apply_react(r: &mut ReactConfig, env: &HashMap<String, String>) -> Result<(), ConfigError> {
    set(&mut r.max_iterations, int(env, "REACT_MAX_ITERATIONS", 1)?);
    set(
        &mut r.tool_selection_threshold,
        int(env, "REACT_TOOL_SELECTION_THRESHOLD", 0)?,
    );
    set(
        &mut r.tool_selection_max,
        int(env, "REACT_TOOL_SELECTION_MAX", 1)?,
    );
    set(
        &mut r.self_reflection_interval,
        int(env, "REACT_SELF_REFLECTION_INTERVAL", 0)?,
    );
    set(
        &mut r.cycle_detection_threshold,
        int(env, "REACT_CYCLE_DETECTION_THRESHOLD", 1)?,
    );
    set(
        &mut r.completion_check_min_tools,
        int(env, "REACT_COMPLETION_CHECK_MIN_TOOLS", 0)?,
    );
    set(
        &mut r.synthesis_truncation,
        int(env, "REACT_SYNTHESIS_TRUNCATION", 1)?,
    );
    set(
        &mut r.max_tool_calls_per_reply,
        int(env, "REACT_MAX_TOOL_CALLS_PER_REPLY", 1)?,
    );
    set(
        &mut r.max_tool_calls_per_run,
        int(env, "REACT_MAX_TOOL_CALLS_PER_RUN", 1)?,
    );
    set(
        &mut r.max_tool_arguments_bytes,
        int(env, "REACT_MAX_TOOL_ARGUMENTS_BYTES", 1)?,
    );
    if let Some(n) = int(env, "REACT_SYNTHESIS_MAX_BYTES", 1)? {
        validate::synthesis_max_bytes("REACT_SYNTHESIS_MAX_BYTES", n)?;
        r.synthesis_max_bytes = n;
    }
    if let Some(v) = int(env, "CONTEXT_BUDGET_TOKENS", 1)? {
        r.context_budget_tokens = Some(v);
    }
    Ok(())
}

fn set<T>(slot: &mut T, value: Option<T>) {
    if let Some(v) = value {
        *slot = v;
    }
}

/// Every variable under reagent's prefixes that something in this repository reads: the
/// server's settings first (this module, `models` and `dag`), then the few only the test suite,
/// the scripts and the load generator read. Start-up warns about any other `LLM_*`,
/// `REAGENT_*`, `REACT_*` or `DAG_*` variable, since a misspelt one is otherwise ignored.
pub const KNOWN_VARIABLES: &[&str] = &[
    "REAGENT_CONFIG",
    "REAGENT_BIND",
    "DATABASE_URL",
    "REAGENT_STATIC_DIR",
    "REAGENT_CORS_ORIGINS",
    "REAGENT_API_KEYS",
    "REAGENT_HEADER_TIMEOUT_S",
    "REAGENT_SSE_STALL_S",
    "REAGENT_MAX_CONNECTIONS",
    "REAGENT_HTTP_ALLOW_PRIVATE",
    "REAGENT_MAX_CONCURRENT_TOOLS",
    "REAGENT_MAX_CONCURRENT_TOOLS_PER_RUN",
    "REAGENT_SHUTDOWN_GRACE_S",
    "REAGENT_RESUME_ON_RESTART",
    "REAGENT_INSTANCE_ID",
    "REAGENT_LEASE_TTL_S",
    "REAGENT_LEASE_RENEW_S",
    "REAGENT_OTEL_CAPTURE_CONTENT",
    "REAGENT_TRACE_URL",
    "REAGENT_LOG_FORMAT",
    "REAGENT_DEFAULT_ENGINE",
    "LLM_BASE_URL",
    "LLM_API_KEY",
    "OPENAI_API_KEY",
    "LLM_MODEL",
    "LLM_TOOL_CALL",
    "LLM_JSON_MODE",
    "LLM_JSON_SCHEMA",
    "LLM_TOOL_CHOICE",
    "LLM_CONTEXT_WINDOW",
    "LLM_MAX_OUTPUT_TOKENS",
    "LLM_TEMPERATURE",
    "LLM_TOP_P",
    "LLM_SEED",
    "LLM_SYNTHESIS",
    "LLM_TIMEOUT_S",
    "LLM_MAX_RETRIES",
    "LLM_MAX_RESPONSE_BYTES",
    "LLM_HTTP2",
    "REACT_MAX_ITERATIONS",
    "REACT_TOOL_SELECTION_THRESHOLD",
    "REACT_TOOL_SELECTION_MAX",
    "REACT_SELF_REFLECTION_INTERVAL",
    "REACT_CYCLE_DETECTION_THRESHOLD",
    "REACT_COMPLETION_CHECK_MIN_TOOLS",
    "REACT_SYNTHESIS_TRUNCATION",
    "REACT_MAX_TOOL_CALLS_PER_REPLY",
    "REACT_MAX_TOOL_CALLS_PER_RUN",
    "REACT_MAX_TOOL_ARGUMENTS_BYTES",
    "REACT_SYNTHESIS_MAX_BYTES",
    "CONTEXT_BUDGET_TOKENS",
    "DAG_MAX_STEPS",
    "DAG_MAX_CONCURRENCY",
    "DAG_STEP_MAX_ITERATIONS",
    "DAG_STEP_TIMEOUT_S",
    "DAG_MAX_REPLANS",
    "DAG_MAX_ROUNDS",
    "DAG_REPLAN_STOP_CONFIDENCE",
    // Read by the load generator, the tests and the scripts, not by the server.
    "REAGENT_BIN",
    "REAGENT_SKIP_PG",
    "REAGENT_PEERS_DIR",
    "REAGENT_LLAMA_CACHE",
];

/// The namespaces whose unknown variables are reported (each followed by `_`).
const PREFIXES: [&str; 4] = ["LLM", "REAGENT", "REACT", "DAG"];

/// One warning per set variable under reagent's prefixes that nothing reads, naming the nearest
/// known variable. `referenced` are the names the configuration itself points at
/// (`api_key_env`, `${VAR}`), which are the user's to choose.
pub(super) fn unknown_variables(
    env: &HashMap<String, String>,
    referenced: &[String],
) -> Vec<String> {
    let mut unknown: Vec<&String> = env
        .keys()
        .filter(|k| {
            PREFIXES
                .iter()
                .any(|p| k.strip_prefix(p).is_some_and(|rest| rest.starts_with('_')))
        })
        .filter(|k| !KNOWN_VARIABLES.contains(&k.as_str()) && !referenced.contains(k))
        .collect();
    unknown.sort();
    unknown
        .into_iter()
        .map(|name| match nearest(name, KNOWN_VARIABLES) {
            Some(known) => format!("unknown variable {name} is ignored (did you mean {known}?)"),
            None => format!("unknown variable {name} is ignored"),
        })
        .collect()
}

/// The candidate closest to `name` by edit distance, when it is close enough to be a typo.
pub(super) fn nearest<'a>(name: &str, candidates: &[&'a str]) -> Option<&'a str> {
    let (best, distance) = candidates
        .iter()
        .map(|c| (*c, strsim::levenshtein(name, c)))
        .min_by_key(|(_, d)| *d)?;
    (distance <= (name.len() / 3).max(2)).then_some(best)
}
