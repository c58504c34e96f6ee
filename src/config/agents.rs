//! `[[agents]]` (docs/protocols.md): named agents — a model, a system prompt, a tool selection, an
//! engine and an iteration cap — that conversations can be created with and that the
//! OpenAI-compatible API offers as models. With none declared there is one, [`IMPLICIT_AGENT`]:
//! the default model with every tool.
//!
//! Tool patterns are globs (`calculator`, `web_*`, `github__*` for every tool of an MCP server)
//! matched against the registry when a run starts, so tools that appear later (an MCP server
//! that connects after start-up) are picked up without a restart.

use std::collections::HashSet;

use globset::{Glob, GlobMatcher};
use serde::{Deserialize, Serialize};

use super::validate::at_least;
use super::ConfigError;
use crate::domain::{Engine, Sampling, SynthesisPolicy};

/// The agent that exists when the file declares none.
pub const IMPLICIT_AGENT: &str = "reagent";

/// One `[[agents]]` entry as written, or the body of `POST /api/agents` (docs/api.md): both
/// are checked by [`spec_of`], so an agent made through the API is valid exactly when the same
/// entry in the file would be.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AgentEntry {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub engine: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_iterations: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub synthesis: Option<SynthesisPolicy>,
    /// Over `[react] completion_check` for this agent's runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completion_check: Option<bool>,
}

/// A validated agent.
#[derive(Clone, Debug, Serialize)]
pub struct AgentSpec {
    /// What clients name it by (`agent` of a conversation, `model` of `/v1`).
    pub name: String,
    /// A `[[models]]` name; the default model when absent.
    pub model: Option<String>,
    pub system_prompt: Option<String>,
    /// Tool-name globs; every tool when absent.
    pub tools: Option<Vec<String>>,
    /// The engine of its runs; the server's default when absent.
    pub engine: Option<Engine>,
    pub max_iterations: Option<u32>,
    pub description: Option<String>,
    /// Laid over its model's sampling settings in every request of its runs.
    pub sampling: Sampling,
    /// Over its model's `synthesis` (docs/configuration.md); the model's when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub synthesis: Option<SynthesisPolicy>,
    /// Over `[react] completion_check`; the server's setting when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completion_check: Option<bool>,
    #[serde(skip)]
    matchers: Option<Vec<GlobMatcher>>,
}

impl PartialEq for AgentSpec {
    /// The matchers are compiled from `tools`, so comparing `tools` compares them.
    fn eq(&self, other: &Self) -> bool {
        (
            &self.name,
            &self.model,
            &self.system_prompt,
            &self.tools,
            self.engine,
            self.max_iterations,
            &self.description,
            self.sampling,
            self.synthesis,
            self.completion_check,
        ) == (
            &other.name,
            &other.model,
            &other.system_prompt,
            &other.tools,
            other.engine,
            other.max_iterations,
            &other.description,
            other.sampling,
            other.synthesis,
            other.completion_check,
        )
    }
}

impl AgentSpec {
    /// The implicit agent: the default model with every tool.
    pub fn implicit() -> Self {
        Self {
            name: IMPLICIT_AGENT.into(),
            model: None,
            system_prompt: None,
            tools: None,
            engine: None,
            max_iterations: None,
            description: Some("The default model with every tool".into()),
            sampling: Sampling::default(),
            synthesis: None,
            completion_check: None,
            matchers: None,
        }
    }

    /// Whether this agent may use the tool called `name`.
    pub fn allows_tool(&self, name: &str) -> bool {
        match &self.matchers {
            None => true,
            Some(globs) => globs.iter().any(|g| g.is_match(name)),
        }
    }

    /// Whether this agent restricts its tools at all.
    pub fn selects_tools(&self) -> bool {
        self.matchers.is_some()
    }
}

/// Agent names become OpenAI model ids and URL-safe identifiers.
fn agent_name(key: &str, name: &str) -> Result<(), ConfigError> {
    let ok = (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':'));
    if ok {
        Ok(())
    } else {
        Err(ConfigError::value(
            key,
            name,
            "expected 1 to 64 letters, digits, '_', '-', '.' or ':'",
        ))
    }
}

/// Checks the file's entries and returns the agents (the implicit one when there are none).
/// `models` are the configured model names, for the `model` references.
pub(super) fn resolve(
    entries: &[AgentEntry],
    models: &[&str],
) -> Result<Vec<AgentSpec>, ConfigError> {
    if entries.is_empty() {
        return Ok(vec![AgentSpec::implicit()]);
    }
    let mut names = HashSet::new();
    let mut out = Vec::with_capacity(entries.len());
    for (i, a) in entries.iter().enumerate() {
        let prefix = format!("agents[{i}].");
        let spec = spec_of(&prefix, a, models)?;
        if !names.insert(a.name.as_str()) {
            return Err(ConfigError::invalid(
                format!("{prefix}name"),
                format!("duplicate agent name {:?}", a.name),
            ));
        }
        out.push(spec);
    }
    Ok(out)
}

/// Checks one entry and returns its agent; error keys are the field names after `prefix`
/// (`agents[0].` in the file, nothing for the API). `models` are the configured model names.
pub fn spec_of(prefix: &str, a: &AgentEntry, models: &[&str]) -> Result<AgentSpec, ConfigError> {
    let key = |field: &str| format!("{prefix}{field}");
    agent_name(&key("name"), &a.name)?;
    if let Some(m) = &a.model {
        if !models.contains(&m.as_str()) {
            let mut message = format!("{m:?} is not a configured model");
            message.push_str(&nearest(m, models.iter().copied()));
            return Err(ConfigError::invalid(key("model"), message));
        }
    }
    let engine = match &a.engine {
        None => None,
        Some(e) => Some(
            e.parse::<Engine>()
                .map_err(|_| ConfigError::value(key("engine"), e, "expected react, dag or auto"))?,
        ),
    };
    if let Some(n) = a.max_iterations {
        at_least(&key("max_iterations"), n, 1)?;
    }
    let sampling = Sampling {
        temperature: a.temperature,
        top_p: a.top_p,
        seed: a.seed,
    };
    if let Some((field, value, expected)) = sampling.invalid() {
        return Err(ConfigError::value(key(field), value, expected));
    }
    let matchers = a
        .tools
        .as_ref()
        .map(|globs| {
            globs
                .iter()
                .enumerate()
                .map(|(j, g)| compile(&key(&format!("tools[{j}]")), g))
                .collect::<Result<Vec<_>, _>>()
        })
        .transpose()?;
    Ok(AgentSpec {
        name: a.name.clone(),
        model: a.model.clone(),
        system_prompt: a.system_prompt.clone().filter(|p| !p.trim().is_empty()),
        tools: a.tools.clone(),
        engine,
        max_iterations: a.max_iterations,
        description: a.description.clone(),
        sampling,
        synthesis: a.synthesis,
        completion_check: a.completion_check,
        matchers,
    })
}

/// Checks every agent's tool entries against the tools the service has (`known`: built-ins and
/// HTTP tools) and the configured MCP servers, whose tools are only known once connected: an
/// entry of `<server>__...` for a configured server passes, any other entry that matches no
/// tool is an error naming the agent, the entry and the nearest valid names.
pub fn check_tools(
    agents: &[AgentSpec],
    known: &[&str],
    mcp_servers: &[&str],
) -> Result<(), ConfigError> {
    for (i, agent) in agents.iter().enumerate() {
        check_agent_tools(&format!("agents[{i}]."), agent, known, mcp_servers)?;
    }
    Ok(())
}

/// [`check_tools`] for one agent, its error keys after `prefix` (see [`spec_of`]).
pub fn check_agent_tools(
    prefix: &str,
    agent: &AgentSpec,
    known: &[&str],
    mcp_servers: &[&str],
) -> Result<(), ConfigError> {
    let (Some(entries), Some(matchers)) = (&agent.tools, &agent.matchers) else {
        return Ok(());
    };
    for (j, (entry, glob)) in entries.iter().zip(matchers).enumerate() {
        if known.iter().any(|t| glob.is_match(t)) || names_mcp_tools(entry, mcp_servers) {
            continue;
        }
        return Err(ConfigError::invalid(
            format!("{prefix}tools[{j}]"),
            unmatched(&agent.name, entry, known, mcp_servers),
        ));
    }
    Ok(())
}

/// Whether `entry` can name tools of a configured MCP server: it starts with `<server>__`, or
/// its server part is itself a pattern (`*__search`) and some server is configured.
fn names_mcp_tools(entry: &str, mcp_servers: &[&str]) -> bool {
    let by_prefix = mcp_servers
        .iter()
        .any(|s| entry.starts_with(&format!("{s}__")));
    let server_part = entry.split("__").next().unwrap_or_default();
    let wild = entry.contains("__") && server_part.contains(['*', '?', '[', '{']);
    by_prefix || (wild && !mcp_servers.is_empty())
}

/// The error text for a tool entry that matches nothing.
fn unmatched(agent: &str, entry: &str, known: &[&str], mcp_servers: &[&str]) -> String {
    let servers: Vec<String> = mcp_servers.iter().map(|s| format!("{s}__*")).collect();
    let candidates = known
        .iter()
        .copied()
        .chain(servers.iter().map(String::as_str));
    let mut message = format!("agent {agent:?}: {entry:?} matches no tool");
    message.push_str(&nearest(entry, candidates));
    if mcp_servers.is_empty() {
        message.push_str("; an MCP server's tools are written <server>__<tool>");
    }
    message
}

/// `" (did you mean …?); nearest: a, b, c"`: the three names closest to `wanted` (edit
/// distance), the first suggested when it is close enough to be a typo; empty without names.
fn nearest<'a>(wanted: &str, names: impl Iterator<Item = &'a str>) -> String {
    let mut ranked: Vec<(usize, &str)> =
        names.map(|c| (strsim::levenshtein(wanted, c), c)).collect();
    ranked.sort();
    let Some((distance, best)) = ranked.first() else {
        return String::new();
    };
    let mut out = String::new();
    if *distance <= (wanted.len() / 3).max(2) {
        out.push_str(&format!(" (did you mean {best:?}?)"));
    }
    let names: Vec<&str> = ranked.iter().take(3).map(|(_, c)| *c).collect();
    out.push_str(&format!("; nearest: {}", names.join(", ")));
    out
}

fn compile(key: &str, glob: &str) -> Result<GlobMatcher, ConfigError> {
    if glob.trim().is_empty() {
        return Err(ConfigError::invalid(key, "must be a tool name or glob"));
    }
    Glob::new(glob)
        .map(|g| g.compile_matcher())
        .map_err(|e| ConfigError::invalid(key, format!("bad glob {glob:?}: {e}")))
}

#[cfg(test)]
mod tests;
