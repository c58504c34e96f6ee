//! A tenant's own agents (docs/api.md "Agents"): made, changed (a new immutable version) and
//! deleted through the API, checked exactly as `[[agents]]` entries are, against the models
//! and tools this instance has.

use super::catalog::CatalogAgent;
use super::core::checks::{check_at_most, check_storable};
use super::core::manager::{RunError, RunManager};
use crate::config::{check_agent_tools, spec_of, AgentEntry, ConfigError};

/// Most tool patterns an API agent may list.
pub const MAX_AGENT_TOOLS: usize = 256;
/// Longest description, tool pattern or model name of an API agent, in characters.
pub const MAX_AGENT_FIELD_CHARS: usize = 1000;

fn invalid(e: ConfigError) -> RunError {
    RunError::Invalid(e.to_string())
}

impl RunManager {
    /// Stores `owner`'s new agent as version 1 (a deleted one's name continues its numbers).
    pub async fn create_agent(
        &self,
        owner: &str,
        entry: AgentEntry,
    ) -> Result<CatalogAgent, RunError> {
        self.catalog.writable(&entry.name)?;
        let spec = self.check_agent(&entry)?;
        let version = self
            .store
            .create_agent(owner, &spec.name, &json(&entry)?)
            .await?
            .ok_or_else(|| {
                RunError::Conflict(format!(
                    "an agent named '{}' exists already: PUT /api/agents/{} makes its next version",
                    spec.name, spec.name
                ))
            })?;
        self.written(owner, &spec.name, version).await
    }

    /// Stores `entry` as the next version of `owner`'s agent `name`.
    pub async fn update_agent(
        &self,
        owner: &str,
        name: &str,
        entry: AgentEntry,
    ) -> Result<CatalogAgent, RunError> {
        self.catalog.writable(name)?;
        // An agent that does not exist is not found, whatever the body says (a path that is no
        // agent name included).
        if self.catalog.get(owner, name, None).await?.is_none() {
            return Err(RunError::NotFound);
        }
        if entry.name != name {
            return Err(RunError::Invalid(format!(
                "name: '{}' is not the agent's name '{name}' (an agent cannot be renamed)",
                entry.name
            )));
        }
        self.check_agent(&entry)?;
        let version = self
            .store
            .update_agent(owner, name, &json(&entry)?)
            .await?
            .ok_or(RunError::NotFound)?;
        self.written(owner, name, version).await
    }

    /// Hides `owner`'s agent `name` from lists and new conversations; its conversations keep
    /// running on their versions.
    pub async fn delete_agent(&self, owner: &str, name: &str) -> Result<(), RunError> {
        self.catalog.writable(name)?;
        match self.store.delete_agent(owner, name).await? {
            true => Ok(()),
            false => Err(RunError::NotFound),
        }
    }

    /// The version just written, as the catalog reads it.
    async fn written(
        &self,
        owner: &str,
        name: &str,
        version: u32,
    ) -> Result<CatalogAgent, RunError> {
        self.catalog
            .pinned(owner, name, Some(version))
            .await?
            .ok_or_else(|| RunError::Internal(format!("agent '{name}' vanished after its write")))
    }

    /// The `[[agents]]` checks (models and tools of this instance) and the API's bounds.
    fn check_agent(&self, entry: &AgentEntry) -> Result<crate::config::AgentSpec, RunError> {
        check_entry(entry, self.settings.max_query_chars)?;
        let spec = spec_of("", entry, &self.models.names()).map_err(invalid)?;
        let tools = self.tools().names();
        let known: Vec<&str> = tools.iter().map(String::as_str).collect();
        check_agent_tools("", &spec, &known, &self.catalog.mcp_servers()).map_err(invalid)?;
        Ok(spec)
    }
}

fn json(entry: &AgentEntry) -> Result<String, RunError> {
    serde_json::to_string(entry).map_err(|e| RunError::Internal(format!("agent JSON: {e}")))
}

/// The bounds of API input the file has no need of: storable text, a system prompt no longer
/// than a query, a bounded tool list.
fn check_entry(entry: &AgentEntry, max_prompt_chars: usize) -> Result<(), RunError> {
    check_storable("name", &entry.name)?;
    let short = [
        ("model", entry.model.as_deref()),
        ("engine", entry.engine.as_deref()),
        ("description", entry.description.as_deref()),
    ];
    for (field, text) in short {
        check_at_most(field, text.unwrap_or_default(), MAX_AGENT_FIELD_CHARS)?;
    }
    let prompt = entry.system_prompt.as_deref().unwrap_or_default();
    check_at_most("system_prompt", prompt, max_prompt_chars)?;
    if let Some(tools) = &entry.tools {
        if tools.len() > MAX_AGENT_TOOLS {
            return Err(RunError::Invalid(format!(
                "tools: at most {MAX_AGENT_TOOLS} entries, got {}",
                tools.len()
            )));
        }
        for (i, tool) in tools.iter().enumerate() {
            check_at_most(&format!("tools[{i}]"), tool, MAX_AGENT_FIELD_CHARS)?;
        }
    }
    Ok(())
}
