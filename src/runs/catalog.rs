//! The agent catalog (docs/api.md "Agents"): the one place a run, `/api/agents` and the
//! conversation checks ask for "agent `name` (at `version`) for tenant T". It answers with the
//! configured agents (from memory, read-only, never shadowed) and T's own agents from the
//! store, read at each question, so every instance sees a change on its next run start.
//!
//! Another tenant's agent is simply absent. A stored spec is checked again when read (the
//! model it names may have left the configuration since: the run then fails as for any
//! unknown model). A version never changes once written, so each is parsed and checked once
//! per process: a conversation's runs find their pinned version in memory.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use dashmap::DashMap;

use crate::config::{spec_of, AgentEntry, AgentSpec};
use crate::store::{Store, StoreError, StoredAgent};

/// What the catalog refuses; the run layer's errors of the same names.
#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    Conflict(String),
    #[error("not found")]
    NotFound,
    /// A stored agent that no longer reads back.
    #[error("{0}")]
    Corrupt(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Where an agent comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AgentSource {
    /// `[[agents]]` of the configuration: read-only.
    Config,
    /// Made through `/api/agents` by its tenant.
    Api,
}

/// An agent as the catalog hands it out.
#[derive(Clone, Debug)]
pub struct CatalogAgent {
    pub spec: Arc<AgentSpec>,
    pub source: AgentSource,
    /// The version of an API agent; `None` for a configured one.
    pub version: Option<u32>,
    /// When an API agent's version was written.
    pub created_at: Option<DateTime<Utc>>,
}

impl CatalogAgent {
    fn configured(spec: &Arc<AgentSpec>) -> Self {
        Self {
            spec: spec.clone(),
            source: AgentSource::Config,
            version: None,
            created_at: None,
        }
    }

    fn stored(row: StoredAgent) -> Result<Self, CatalogError> {
        let entry: AgentEntry = serde_json::from_str(&row.spec)
            .map_err(|e| CatalogError::Corrupt(format!("unreadable agent {:?}: {e}", row.name)))?;
        // Its model was checked when written; whether it is still configured is the run's
        // question (an unknown model), not a reason to lose the agent.
        let own: Vec<&str> = entry.model.iter().map(String::as_str).collect();
        let spec = spec_of("", &entry, &own)
            .map_err(|e| CatalogError::Corrupt(format!("stored agent {:?}: {e}", row.name)))?;
        Ok(Self {
            spec: Arc::new(spec),
            source: AgentSource::Api,
            version: Some(row.version),
            created_at: Some(row.created_at),
        })
    }
}

/// Parsed versions kept at most; past it the memory starts again empty (a version is only
/// ever re-read, never wrong).
const PARSED_VERSIONS_KEPT: usize = 4096;

/// An API agent's version: owner, name, version.
type VersionKey = (String, String, u32);

/// The configured agents plus every tenant's stored ones.
#[derive(Clone, Debug)]
pub struct Catalog {
    /// Shared, so a run start takes a reference count, not a copy of the spec.
    configured: Arc<[Arc<AgentSpec>]>,
    store: Store,
    /// Configured MCP servers: an API agent's `<server>__…` pattern passes before they connect.
    mcp_servers: Vec<String>,
    /// Versions already parsed and checked (immutable once written).
    parsed: Arc<DashMap<VersionKey, CatalogAgent>>,
}

impl Catalog {
    pub fn new(configured: &[AgentSpec], store: Store, mcp_servers: Vec<String>) -> Self {
        Self {
            configured: configured.iter().cloned().map(Arc::new).collect(),
            store,
            mcp_servers,
            parsed: Arc::default(),
        }
    }

    /// `row` of `owner` as an agent, parsed once per process.
    fn parse(&self, owner: &str, row: StoredAgent) -> Result<CatalogAgent, CatalogError> {
        let key = (owner.to_string(), row.name.clone(), row.version);
        if let Some(hit) = self.parsed.get(&key) {
            return Ok(hit.clone());
        }
        let agent = CatalogAgent::stored(row)?;
        if self.parsed.len() >= PARSED_VERSIONS_KEPT {
            self.parsed.clear();
        }
        self.parsed.insert(key, agent.clone());
        Ok(agent)
    }

    pub fn mcp_servers(&self) -> Vec<&str> {
        self.mcp_servers.iter().map(String::as_str).collect()
    }

    /// The configured agents' names, in configuration order.
    pub fn configured_names(&self) -> impl Iterator<Item = &str> {
        self.configured.iter().map(|a| a.name.as_str())
    }

    /// The configured agent called `name`.
    pub fn configured(&self, name: &str) -> Option<&Arc<AgentSpec>> {
        self.configured.iter().find(|a| a.name == name)
    }

    /// `owner`'s live agent `name`: its latest version, or `version` (configured agents
    /// have none: asking for one is `Invalid`).
    pub async fn get(
        &self,
        owner: &str,
        name: &str,
        version: Option<u32>,
    ) -> Result<Option<CatalogAgent>, CatalogError> {
        if let Some(spec) = self.configured(name) {
            if version.is_some() {
                return Err(CatalogError::Invalid(format!(
                    "agent_version: the agent '{name}' is configured and has no versions"
                )));
            }
            return Ok(Some(CatalogAgent::configured(spec)));
        }
        let row = match version {
            None => self.store.agent(owner, name).await?,
            Some(v) => match self.store.agent(owner, name).await? {
                // Only a live agent's versions can be picked for new conversations.
                Some(_) => self.store.agent_version(owner, name, v).await?,
                None => None,
            },
        };
        row.map(|r| self.parse(owner, r)).transpose()
    }

    /// The agent a conversation of `owner`'s runs: its recorded `version` even when the agent
    /// has been deleted since, else the configured agent (or the API agent's latest).
    pub async fn pinned(
        &self,
        owner: &str,
        name: &str,
        version: Option<u32>,
    ) -> Result<Option<CatalogAgent>, CatalogError> {
        match version {
            Some(v) if self.configured(name).is_none() => {
                let key = (owner.to_string(), name.to_string(), v);
                if let Some(hit) = self.parsed.get(&key) {
                    return Ok(Some(hit.clone()));
                }
                let row = self.store.agent_version(owner, name, v).await?;
                row.map(|r| self.parse(owner, r)).transpose()
            }
            _ => self.get(owner, name, None).await,
        }
    }

    /// The configured agents, then `owner`'s by name.
    pub async fn list(&self, owner: &str) -> Result<Vec<CatalogAgent>, CatalogError> {
        let mut out: Vec<CatalogAgent> = self
            .configured
            .iter()
            .map(CatalogAgent::configured)
            .collect();
        for row in self.store.list_agents(owner).await? {
            // A configured name added after the agent was made hides it: never shadowed.
            if self.configured(&row.name).is_none() {
                out.push(self.parse(owner, row)?);
            }
        }
        Ok(out)
    }

    /// Every version of `owner`'s live agent `name`, oldest first; `NotFound` when there is
    /// none, `Conflict` for a configured agent.
    pub async fn versions(
        &self,
        owner: &str,
        name: &str,
    ) -> Result<Vec<CatalogAgent>, CatalogError> {
        self.writable(name)?;
        let rows = self.store.agent_versions(owner, name).await?;
        if rows.is_empty() {
            return Err(CatalogError::NotFound);
        }
        rows.into_iter().map(|r| self.parse(owner, r)).collect()
    }

    /// `Conflict` for the name of a configured agent, which the API may not change.
    pub fn writable(&self, name: &str) -> Result<(), CatalogError> {
        match self.configured(name) {
            Some(_) => Err(CatalogError::Conflict(format!(
                "the agent '{name}' is configured in config.toml and read-only"
            ))),
            None => Ok(()),
        }
    }
}
