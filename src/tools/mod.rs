//! Tools the agent can call: the [`Tool`] trait, a [`ToolRegistry`] that keeps registration
//! order and can be filtered (tool selection), the built-ins (`calculator`,
//! `current_time`, `http_request`), HTTP tools declared in `[[tools.http]]` (docs/configuration.md), the
//! tools of MCP servers declared in `[[mcp]]` ([`mcp`], docs/protocols.md) and the remote A2A
//! agents declared in `[[a2a]]` ([`a2a`]). A tool that works for long may report [`Progress`].

pub mod a2a;
pub mod builtin;
pub mod http_request;
pub mod http_tool;
pub mod mcp;
pub mod names;
pub mod ssrf;

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use serde::Serialize;
use serde_json::Value;

use crate::llm::ToolDefinition;

/// Where a tool comes from, as listed by `GET /api/tools`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolSource {
    Builtin,
    Http,
    Mcp,
    A2a,
}

/// A document a tool produced (HTML, Markdown, a file). The LLM never sees its content, only
/// a fixed notice; the UI gets a link.
#[derive(Clone, Debug, PartialEq)]
pub struct Artifact {
    pub name: String,
    pub mime_type: String,
    pub data: Vec<u8>,
}

/// What a successful tool call returns.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ToolOutput {
    /// The observation text.
    pub content: String,
    pub artifacts: Vec<Artifact>,
}

impl ToolOutput {
    pub fn text(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            artifacts: Vec::new(),
        }
    }
}

/// Why a tool call failed; the engine turns it into an error observation.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum ToolError {
    #[error("invalid arguments: {0}")]
    InvalidArguments(String),
    #[error("{0}")]
    Failed(String),
    #[error("refused: {0}")]
    Refused(String),
}

/// Where a running call reports what it is doing: each note becomes a
/// `step {type:"tool_progress"}` event of the calling run (docs/api.md). Reporting never
/// blocks; a call made outside a run reports into nothing.
#[derive(Clone, Default)]
pub struct Progress(Option<Arc<dyn Fn(String) + Send + Sync>>);

impl Progress {
    pub fn new(report: impl Fn(String) + Send + Sync + 'static) -> Self {
        Self(Some(Arc::new(report)))
    }

    pub fn report(&self, note: impl Into<String>) {
        if let Some(report) = &self.0 {
            report(note.into())
        }
    }
}

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Progress")
    }
}

#[async_trait]
pub trait Tool: Send + Sync {
    fn name(&self) -> &str;
    /// One line; the tool-selection catalog cuts it to about 80 characters.
    fn description(&self) -> &str;
    /// JSON Schema of the arguments object.
    fn parameters(&self) -> Value;
    fn source(&self) -> ToolSource {
        ToolSource::Builtin
    }
    /// The MCP server a tool comes from (docs/protocols.md).
    fn server(&self) -> Option<&str> {
        None
    }
    /// A tool that changes the world; the `read_only` hook blocks these.
    fn writes(&self) -> bool {
        false
    }
    /// The `approval` hook pauses runs before calling these (docs/api.md).
    fn requires_approval(&self) -> bool {
        false
    }
    /// Overrides the engine's per-tool timeout (default 60 s).
    fn timeout(&self) -> Option<Duration> {
        None
    }
    /// Safe to call again with the same arguments: a call its instance left running is run
    /// again on resume instead of being answered as interrupted (docs/deployment.md).
    fn idempotent(&self) -> bool {
        false
    }
    async fn call(&self, args: Value) -> Result<ToolOutput, ToolError>;
    /// The call as the engine makes it, with where to report progress; most tools have
    /// nothing to report and are just called.
    async fn call_reporting(
        &self,
        args: Value,
        _progress: Progress,
    ) -> Result<ToolOutput, ToolError> {
        self.call(args).await
    }

    fn definition(&self) -> ToolDefinition {
        ToolDefinition {
            name: self.name().to_string(),
            description: self.description().to_string(),
            parameters: self.parameters(),
        }
    }
}

/// An ordered set of tools with lookup by name. Cheap to clone (tools are `Arc`s).
#[derive(Clone, Default)]
pub struct ToolRegistry {
    tools: Vec<Arc<dyn Tool>>,
    index: HashMap<String, usize>,
    /// The tools' definitions, built on first use and shared by every clone made before or
    /// after: each run clones the agent's registry, and the schemas (a few KB of JSON per
    /// tool set) are then held once per process instead of once per run and per request.
    definitions: Arc<OnceLock<Arc<[ToolDefinition]>>>,
}

impl ToolRegistry {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a tool; a tool with the same name replaces the earlier one in place.
    pub fn register(&mut self, tool: Arc<dyn Tool>) {
        // A new set of tools: earlier clones keep their definitions, this one builds its own.
        self.definitions = Arc::default();
        let name = tool.name().to_string();
        match self.index.get(&name) {
            Some(&i) => self.tools[i] = tool,
            None => {
                self.index.insert(name, self.tools.len());
                self.tools.push(tool);
            }
        }
    }

    pub fn with(mut self, tool: Arc<dyn Tool>) -> Self {
        self.register(tool);
        self
    }

    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.index.get(name).map(|&i| &self.tools[i])
    }

    /// The name of the tool `name` means ([`names::resolve`]): itself when it is a tool here,
    /// else the one tool it differs from only in case or `-`/`_`, or is the bare MCP name of.
    pub fn resolve(&self, name: &str) -> Option<&str> {
        if let Some(t) = self.get(name) {
            return Some(t.name());
        }
        let names: Vec<&str> = self.tools.iter().map(|t| t.name()).collect();
        names::resolve(&names, name)
    }

    pub fn len(&self) -> usize {
        self.tools.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &Arc<dyn Tool>> {
        self.tools.iter()
    }

    pub fn names(&self) -> Vec<String> {
        self.tools.iter().map(|t| t.name().to_string()).collect()
    }

    /// The definitions of the tools, in registration order (shared, see the field).
    pub fn definitions(&self) -> Arc<[ToolDefinition]> {
        self.definitions
            .get_or_init(|| self.tools.iter().map(|t| t.definition()).collect())
            .clone()
    }

    /// A registry holding only the named tools that exist here, in registration order.
    pub fn filtered<S: AsRef<str>>(&self, names: &[S]) -> ToolRegistry {
        let wanted: std::collections::HashSet<&str> = names.iter().map(|n| n.as_ref()).collect();
        let mut out = ToolRegistry::new();
        for t in &self.tools {
            if wanted.contains(t.name()) {
                out.register(t.clone());
            }
        }
        out
    }
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}
