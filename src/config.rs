//! Typed configuration (docs/configuration.md), loaded once at start-up and passed down: nothing else in the
//! crate reads environment variables.
//!
//! Sources, later wins: built-in defaults, then `config.toml` in the working directory (or the
//! file named by `REAGENT_CONFIG`), then the environment variables of the docs/configuration.md.
//! [`Config::load_from`] takes the file text and an environment *map* so that tests build
//! configurations in code and never touch the process environment; [`Config::load`] is the thin
//! wrapper `main` uses.
//!
//! Layout of this module: the types and the loading pipeline live here, `sections` holds the
//! sections with their defaults (the one home of each), `hooks` the `[[hooks]]` entries and
//! their one rule set, `env` overlays the environment, `models` resolves the model list
//! (default model, `LLM_*` overrides, keys), `validate` checks the merged result, `summary`
//! renders it without secrets.
//!
//! A bottom layer: config imports only [`crate::domain`]. The modules above take their
//! settings from it (the engine runs on [`ReactConfig`], the hook builder on [`HookPlan`], the
//! HTTP tool on [`HttpToolSpec`]); anything else is mapped where the service is assembled.
//!
//! File layout: the top-level key `default_model = "name"` (it must come before the first
//! `[section]`, as TOML requires) or `default = true` on one `[[models]]` entry picks the default
//! model; otherwise the first entry is the default. Sections: `[server]`, `[auth]`, `[llm]`,
//! `[[models]]`, `[react]`, `[dag]`, `[tools]` (with `[[tools.http]]`), `[[hooks]]`, `[[agents]]`,
//! `[[mcp]]`, `[[a2a]]` and `[[budgets]]`. Unknown keys are errors, so typos fail loudly instead of being silently ignored.

mod a2a;
pub mod agents;
pub mod budgets;
mod dag;
mod demo;
mod env;
mod expand;
pub mod hooks;
mod mcp;
mod models;
mod sections;
mod summary;
#[cfg(test)]
mod tests;
mod validate;

pub use a2a::A2aAgentConfig;
pub use agents::{check_agent_tools, spec_of, AgentEntry, AgentSpec, IMPLICIT_AGENT};
pub use budgets::{BudgetSpec, BudgetWindow, EVERY_TENANT};
pub use dag::DagConfig;
pub use demo::{DEMO_MODEL_NAME, DEMO_NOTICE};
pub use env::KNOWN_VARIABLES;
pub use expand::expand;
pub use hooks::{plan_hooks, FailurePolicy, HookKind, HookPlan, HookSpec, HOOK_KINDS};
pub use mcp::McpServerConfig;
pub use sections::{
    redact_url, Api, ApiKey, AuthConfig, HttpToolSpec, LlmConfig, ModelConfig, ReactConfig, Secret,
    ServerConfig, Thinking, ToolsConfig,
};

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// The default listen address (docs/configuration.md).
pub const DEFAULT_BIND: &str = "127.0.0.1:8080";
/// The default database (docs/configuration.md).
pub const DEFAULT_DATABASE_URL: &str = "sqlite://data/reagent.db";
/// The default model's base URL (docs/configuration.md).
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
/// Where an `api = "anthropic-messages"` model's provider is when `base_url` is not set.
pub const DEFAULT_ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com";
/// The default model's provider model name (docs/configuration.md).
pub const DEFAULT_MODEL: &str = "gpt-4o-mini";
/// The name of the model built from `LLM_*` variables when the file declares no `[[models]]`.
pub const DEFAULT_MODEL_NAME: &str = "default";
/// The file read when `REAGENT_CONFIG` is not set.
pub const DEFAULT_CONFIG_FILE: &str = "config.toml";

/// Every way loading can fail. The message always names the offending key.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// TOML syntax or type error; `message` carries the line and column.
    #[error("invalid config file {origin}: {message}")]
    Parse { origin: String, message: String },
    /// A value of the wrong shape; `value` is already rendered (strings quoted).
    #[error("invalid value {value} for {key}: {expected}")]
    InvalidValue {
        key: String,
        value: String,
        expected: String,
    },
    /// A semantic problem (duplicate names, unknown references...).
    #[error("{key}: {message}")]
    Invalid { key: String, message: String },
}

impl ConfigError {
    /// `invalid value <value> for <key>: <expected>`; `value` is rendered with `Debug` so
    /// strings appear quoted and numbers bare.
    pub fn value(key: impl Into<String>, value: impl fmt::Debug, expected: &str) -> Self {
        Self::InvalidValue {
            key: key.into(),
            value: format!("{value:?}"),
            expected: expected.to_string(),
        }
    }

    pub fn invalid(key: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Invalid {
            key: key.into(),
            message: message.into(),
        }
    }

    /// The key (variable name or file path such as `models[1].base_url`) the error is about.
    pub fn key(&self) -> Option<&str> {
        match self {
            Self::InvalidValue { key, .. } | Self::Invalid { key, .. } => Some(key),
            Self::Read { .. } | Self::Parse { .. } => None,
        }
    }
}

/// The whole configuration, validated.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    pub server: ServerConfig,
    pub auth: AuthConfig,
    pub llm: LlmConfig,
    /// At least one; exactly one has `default = true`.
    pub models: Vec<ModelConfig>,
    /// The name of the default model (also flagged on its entry).
    pub default_model: String,
    pub react: ReactConfig,
    /// `[dag]`: the engine choice and DAG mode.
    pub dag: DagConfig,
    pub tools: ToolsConfig,
    pub hooks: Vec<HookSpec>,
    /// `[[agents]]`, or the implicit `reagent` agent when none is declared (docs/protocols.md).
    pub agents: Vec<AgentSpec>,
    /// `[[mcp]]` (docs/protocols.md), `env`/`headers` expanded.
    pub mcp: Vec<McpServerConfig>,
    /// `[[a2a]]` (docs/protocols.md): remote A2A agents as tools, `headers` expanded.
    pub a2a: Vec<A2aAgentConfig>,
    /// `[[budgets]]` (docs/configuration.md).
    pub budgets: Vec<BudgetSpec>,
    /// What loading noticed and accepted, such as a misspelt variable: start-up logs each as a
    /// warning and `check-config` prints them.
    pub warnings: Vec<String>,
}

/// The file as written: every section optional.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct FileConfig {
    default_model: Option<String>,
    server: ServerConfig,
    auth: AuthConfig,
    llm: LlmConfig,
    models: Vec<ModelConfig>,
    react: ReactConfig,
    dag: DagConfig,
    tools: ToolsConfig,
    hooks: Vec<HookSpec>,
    agents: Vec<agents::AgentEntry>,
    mcp: Vec<McpServerConfig>,
    a2a: Vec<A2aAgentConfig>,
    budgets: Vec<BudgetSpec>,
}

impl Config {
    /// Builds the configuration from the file's text (if any) and an environment map.
    pub fn load_from(
        file_text: Option<&str>,
        env: &HashMap<String, String>,
    ) -> Result<Config, ConfigError> {
        Self::load_named(file_text, DEFAULT_CONFIG_FILE, env)
    }

    /// Reads the file named by `REAGENT_CONFIG` in `env` (an error if missing) or
    /// `default_path` (fine if missing), then applies `env`.
    pub fn load_with(
        env: &HashMap<String, String>,
        default_path: &Path,
    ) -> Result<Config, ConfigError> {
        let explicit = env::get(env, "REAGENT_CONFIG").map(PathBuf::from);
        let path = explicit
            .clone()
            .unwrap_or_else(|| default_path.to_path_buf());
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => Some(text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && explicit.is_none() => None,
            Err(source) => return Err(ConfigError::Read { path, source }),
        };
        Self::load_named(text.as_deref(), &path.display().to_string(), env)
    }

    /// The real thing: `./config.toml` (or `REAGENT_CONFIG`) and the process environment.
    pub fn load() -> Result<Config, ConfigError> {
        let env: HashMap<String, String> = std::env::vars().collect();
        Self::load_with(&env, Path::new(DEFAULT_CONFIG_FILE))
    }

    fn load_named(
        file_text: Option<&str>,
        origin: &str,
        env: &HashMap<String, String>,
    ) -> Result<Config, ConfigError> {
        let mut file: FileConfig = match file_text {
            Some(text) => toml::from_str(text).map_err(|e| ConfigError::Parse {
                origin: origin.to_string(),
                message: e.to_string().trim_end().to_string(),
            })?,
            None => FileConfig::default(),
        };
        // File values are checked under their file names before the environment hides them.
        validate::file(&file)?;
        // `[[hooks]]` follow the one rule set of `hooks` (which the hook builder reads too).
        hooks::plan_hooks(&file.hooks)?;
        dag::check(&file.dag, "dag.")?;
        mcp::validate(&file.mcp)?;
        a2a::validate(&file.a2a)?;
        budgets::validate(&file.budgets)?;
        env::apply(&mut file, env)?;
        dag::apply(&mut file.dag, env)?;
        expand_secrets(&mut file, env)?;
        let (models, default_model) =
            models::resolve(file.models, file.default_model.as_deref(), env)?;
        let model_names: Vec<&str> = models.iter().map(|m| m.name.as_str()).collect();
        let agents = agents::resolve(&file.agents, &model_names)?;
        let mut referenced = expand::referenced(file_text.unwrap_or_default());
        referenced.extend(models.iter().filter_map(|m| m.api_key_env.clone()));
        let warnings = env::unknown_variables(env, &referenced);
        let config = Config {
            server: file.server,
            auth: file.auth,
            llm: file.llm,
            models,
            default_model,
            react: file.react,
            dag: file.dag,
            tools: file.tools,
            hooks: file.hooks,
            agents,
            mcp: file.mcp,
            a2a: file.a2a,
            budgets: file.budgets,
            warnings,
        };
        validate::config(&config)?;
        Ok(config)
    }

    /// The default model's entry.
    pub fn default_model_config(&self) -> Option<&ModelConfig> {
        self.models.iter().find(|m| m.name == self.default_model)
    }

    /// Checks the agents' tool entries against `tools`, the names of the built-in and HTTP
    /// tools (MCP tools are checked by their server prefix): see [`agents::check_tools`].
    pub fn check_agent_tools(&self, tools: &[&str]) -> Result<(), ConfigError> {
        let servers: Vec<&str> = self.mcp.iter().map(|m| m.name.as_str()).collect();
        agents::check_tools(&self.agents, tools, &servers)
    }

    /// The agent called `name`.
    pub fn agent(&self, name: &str) -> Option<&AgentSpec> {
        self.agents.iter().find(|a| a.name == name)
    }
}

/// `${VAR}` in the values that may carry secrets (docs/configuration.md): `[[tools.http]]` headers,
/// `[[hooks]]` URLs, `[[mcp]]` env and headers, `[[a2a]]` headers.
fn expand_secrets(file: &mut FileConfig, env: &HashMap<String, String>) -> Result<(), ConfigError> {
    for (i, t) in file.tools.http.iter_mut().enumerate() {
        expand::expand_map(&format!("tools.http[{i}].headers"), &mut t.headers, env)?;
    }
    for (i, h) in file.hooks.iter_mut().enumerate() {
        if let Some(url) = &h.url {
            let key = format!("hooks[{i}].url");
            let expanded = expand(&key, url, env)?;
            validate::http_url(&key, &expanded)?;
            h.url = Some(expanded);
        }
    }
    mcp::expand(&mut file.mcp, env)?;
    a2a::expand(&mut file.a2a, env)
}
