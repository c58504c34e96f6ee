//! The service's parts built from the configuration: the model registry (one model client
//! per `[[models]]`), the engine settings, the tool registry
//! (built-ins plus `[[tools.http]]` and `[[a2a]]`) and the hook chain. The only place that reads
//! configuration sections into the lower layers' own types.

use std::sync::Arc;
use std::time::Duration;

use crate::agent::hooks::approval::ApprovalBroker;
use crate::agent::hooks::builtin::AuditSink;
use crate::agent::hooks::config::{build_hooks, HookDeps};
use crate::agent::hooks::HookRunner;
use crate::agent::AgentConfig;
use crate::config::{Api, Config, ConfigError, ModelConfig, ReactConfig};
use crate::llm::client::{ClientConfig, ModelClient};
use crate::llm::providers::{AnthropicOptions, Protocol};
use crate::llm::registry::{ModelInfo, ModelRegistry};
use crate::llm::{Llm, LlmError};
use crate::tools::a2a::A2aTool;
use crate::tools::builtin::builtin_registry;
use crate::tools::http_request::HttpRequestOptions;
use crate::tools::http_tool::HttpTool;
use crate::tools::mcp::{collision, McpManager};
use crate::tools::ssrf::SsrfPolicy;
use crate::tools::{Tool, ToolRegistry};

/// Why the run machinery could not be assembled (start-up fails with this message).
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error("tools.http: tool '{name}': {message}")]
    Tool { name: String, message: String },
    #[error("{0}")]
    Hooks(String),
    #[error("mcp: {0}")]
    Mcp(String),
    #[error("a2a: {0}")]
    A2a(String),
}

/// The client of tools, hooks and MCP servers: HTTP/1.1 as before reqwest's `http2` feature
/// (enabled for `LLM_HTTP2`), since they do not negotiate h2. Their configured headers never
/// follow a redirect to another origin.
pub fn http_client() -> Result<reqwest::Client, SetupError> {
    reqwest::Client::builder()
        .http1_only()
        .redirect(crate::net::same_origin_redirects())
        .build()
        .map_err(|e| SetupError::Hooks(format!("cannot build the HTTP client: {e}")))
}

/// One client per `[[models]]` entry, of the protocol its `api` names.
pub fn model_registry(config: &Config) -> Result<ModelRegistry, ConfigError> {
    let mut entries = Vec::with_capacity(config.models.len());
    for m in &config.models {
        let invalid = |e: LlmError| {
            ConfigError::invalid(
                format!("model {:?}", m.name),
                format!("cannot build its client: {e}"),
            )
        };
        let llm: Arc<dyn Llm> = Arc::new(
            ModelClient::new(client_config(m, config))
                .map_err(invalid)?
                .with_name(&m.name)
                .with_synthesis(m.synthesis)
                .with_sampling(m.sampling())
                .with_max_response_bytes(config.llm.max_response_bytes)
                .with_http2(config.llm.http2)
                .map_err(invalid)?,
        );
        entries.push((model_info(m), llm));
    }
    ModelRegistry::from_llms(entries, &config.default_model)
        .map_err(|e| ConfigError::invalid(e.key, e.message))
}

/// What clients may know about a configured model (no URL, no key).
fn model_info(m: &ModelConfig) -> ModelInfo {
    ModelInfo {
        name: m.name.clone(),
        model: m.model.clone(),
        abilities: m.abilities,
        context_window: m.context_window,
        max_output_tokens: m.max_output_tokens,
        hints: m.hints.clone(),
        roles: m.roles.clone(),
        default: m.default,
        needs_key: m.api_key.is_none() && !is_local(&m.base_url),
        demo: m.demo,
    }
}

/// The client settings of one configured model, of the protocol its `api` names.
pub fn client_config(model: &ModelConfig, config: &Config) -> ClientConfig {
    let protocol = match model.api {
        Api::OpenaiChat => Protocol::OpenAi,
        Api::AnthropicMessages => Protocol::Anthropic(AnthropicOptions {
            thinking_budget: model.thinking.map(|t| t.budget_tokens),
            cache: model.cache,
        }),
    };
    ClientConfig {
        protocol,
        base_url: model.base_url.clone(),
        api_key: model.api_key.as_ref().map(|k| k.expose().to_string()),
        model: model.model.clone(),
        abilities: model.abilities,
        context_window: model.context_window,
        max_output_tokens: model.max_output_tokens,
        timeout: Duration::from_secs(config.llm.timeout_s),
        max_retries: config.llm.max_retries,
    }
}

/// The engine settings of `[react]` / `REACT_*` (docs/configuration.md): the section itself.
pub fn agent_config(react: &ReactConfig) -> AgentConfig {
    react.clone()
}

/// The address policy of `http_request`, which also judges the URL an A2A agent's card names.
fn ssrf_policy(config: &Config) -> SsrfPolicy {
    SsrfPolicy {
        allow_private: config.tools.allow_private_http,
        ..SsrfPolicy::default()
    }
}

/// Built-in tools plus the configured HTTP tools and A2A agents; a name two of them share is
/// an error naming both.
pub fn tool_registry(
    config: &Config,
    client: &reqwest::Client,
    a2a: &[Arc<A2aTool>],
) -> Result<ToolRegistry, SetupError> {
    let tools = &config.tools;
    let mut registry = builtin_registry(HttpRequestOptions {
        policy: ssrf_policy(config),
        max_response_bytes: tools.http_max_response_bytes,
        ..HttpRequestOptions::default()
    });
    for spec in &tools.http {
        let tool = HttpTool::new(spec.clone(), client.clone()).map_err(|e| SetupError::Tool {
            name: spec.name.clone(),
            message: e.to_string(),
        })?;
        registry.register(Arc::new(tool));
    }
    for tool in a2a {
        if let Some(other) = registry.get(tool.name()) {
            let source = format!("{:?}", other.source()).to_lowercase();
            return Err(SetupError::A2a(format!(
                "the A2A agent '{}' has the name of the {source} tool '{}'; rename one",
                tool.name(),
                other.name()
            )));
        }
        registry.register(tool.clone());
    }
    Ok(registry)
}

/// One tool per `[[a2a]]` agent (their cards are read later, see [`A2aTool::warm_up`]).
pub fn a2a_tools(
    config: &Config,
    client: &reqwest::Client,
) -> Result<Vec<Arc<A2aTool>>, SetupError> {
    config
        .a2a
        .iter()
        .map(|cfg| {
            A2aTool::new(cfg.clone(), client.clone(), ssrf_policy(config))
                .map(Arc::new)
                .map_err(|e| SetupError::A2a(e.to_string()))
        })
        .collect()
}

/// The agents' tool entries checked against `tools` (built-ins and HTTP tools; MCP tools by
/// their server prefix): `tools = ["calculater"]` fails start-up naming the agent and entry.
pub fn check_agent_tools(config: &Config, tools: &ToolRegistry) -> Result<(), ConfigError> {
    let names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
    config.check_agent_tools(&names)
}

/// What `check-config` runs beyond loading: the checks start-up makes against the tools the
/// configuration builds, without starting anything.
pub fn check(config: &Config) -> Result<(), ConfigError> {
    let unbuilt = |e: SetupError| match e {
        SetupError::Tool { name, message } => {
            ConfigError::invalid(format!("tools.http '{name}'"), message)
        }
        other => ConfigError::invalid("tools", other.to_string()),
    };
    let client = http_client().map_err(unbuilt)?;
    let a2a = a2a_tools(config, &client).map_err(unbuilt)?;
    let tools = tool_registry(config, &client, &a2a).map_err(unbuilt)?;
    check_agent_tools(config, &tools)
}

/// `base` plus every MCP tool. At start-up (`strict`) a name two tools share is an error
/// naming both; after a tool list changed, the later claimant is left out with a log line.
pub fn with_mcp_tools(
    base: &ToolRegistry,
    mcp: &McpManager,
    strict: bool,
) -> Result<ToolRegistry, SetupError> {
    let mut claims: Vec<(String, String)> = base
        .iter()
        .map(|t| {
            let source = format!("{:?}", t.source()).to_lowercase();
            (
                t.name().to_string(),
                format!("the {source} tool '{}'", t.name()),
            )
        })
        .collect();
    claims.extend(mcp.claims());
    if strict {
        if let Some(message) = collision(claims) {
            return Err(SetupError::Mcp(message));
        }
    }
    let mut registry = base.clone();
    for tool in mcp.tools() {
        if registry.get(tool.name()).is_some() {
            tracing::error!(
                tool = tool.name(),
                "an MCP tool has the name of another tool; left out"
            );
            continue;
        }
        registry.register(tool);
    }
    Ok(registry)
}

/// The hook chain of `[[hooks]]`, plus the approval hook when a tool requires approval.
pub fn hook_runner(
    config: &Config,
    tools: &ToolRegistry,
    approvals: Arc<ApprovalBroker>,
    audit: Option<Arc<dyn AuditSink>>,
    client: &reqwest::Client,
) -> Result<HookRunner, SetupError> {
    let deps = HookDeps {
        audit,
        approvals,
        http: client.clone(),
    };
    // MCP tools may appear later (list_changed): their globs alone decide.
    let needs_approval = tools.iter().any(|t| t.requires_approval())
        || config.mcp.iter().any(|m| !m.requires_approval.is_empty());
    build_hooks(&config.hooks, &deps, needs_approval).map_err(|e| SetupError::Hooks(e.to_string()))
}

/// What start-up should warn about the default model: no key for a provider that is not on
/// this machine (every run would fail with an authentication error), naming what to set.
pub fn key_warning(config: &Config) -> Option<String> {
    let model = config.default_model_config()?;
    if model.api_key.is_some() || is_local(&model.base_url) {
        return None;
    }
    let variable = model.api_key_env.as_deref().unwrap_or("LLM_API_KEY");
    Some(format!(
        "the default model '{}' has no API key and its base URL {} is not local: runs will \
         fail until {variable} is set (or LLM_BASE_URL points at a local server)",
        model.name, model.base_url
    ))
}

/// The warning for an address other machines can reach with no API key configured: every
/// caller is then one anonymous tenant that runs agents and reads every conversation.
pub fn open_bind_warning(config: &Config) -> Option<String> {
    let bind = config.server.bind;
    if bind.ip().is_loopback() || !config.auth.keys.is_empty() {
        return None;
    }
    Some(format!(
        "listening on {bind} (REAGENT_BIND), reachable from other machines, with no API key: \
         anyone who reaches it can run agents and read every conversation; set \
         REAGENT_API_KEYS (or bind 127.0.0.1)"
    ))
}

/// A base URL on this machine (llama.cpp, Ollama, vLLM usually need no key).
fn is_local(base_url: &str) -> bool {
    let Ok(url) = url::Url::parse(base_url) else {
        return false;
    };
    match url.host() {
        Some(url::Host::Domain(d)) => d == "localhost" || d.ends_with(".localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback() || ip.is_unspecified() || ip.is_private(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback() || ip.is_unspecified(),
        None => false,
    }
}
