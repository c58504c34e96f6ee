//! An MCP server's tool as a reagent [`Tool`]: its name, description and schema as listed,
//! the operator's `writes`/`requires_approval` marks, and calls through its server.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;

use super::server::{Server, ToolEntry};
use crate::tools::{Tool, ToolError, ToolOutput, ToolSource};

/// How much longer than the server's `timeout_s` the engine waits, so that our own timeout
/// (which sends `notifications/cancelled`) fires first.
const ENGINE_MARGIN: Duration = Duration::from_secs(2);

pub struct McpTool {
    pub(super) server: Arc<Server>,
    pub(super) entry: ToolEntry,
}

impl McpTool {
    /// The name of the server this tool comes from.
    pub fn server_name(&self) -> &str {
        &self.server.cfg.name
    }
}

#[async_trait]
impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.entry.name
    }
    fn description(&self) -> &str {
        &self.entry.description
    }
    fn parameters(&self) -> Value {
        self.entry.schema.clone()
    }
    fn source(&self) -> ToolSource {
        ToolSource::Mcp
    }
    fn server(&self) -> Option<&str> {
        Some(self.server_name())
    }
    fn writes(&self) -> bool {
        self.entry.writes
    }
    fn requires_approval(&self) -> bool {
        self.entry.requires_approval
    }
    fn timeout(&self) -> Option<Duration> {
        Some(Duration::from_secs(self.server.cfg.timeout_s) + ENGINE_MARGIN)
    }
    async fn call(&self, args: Value) -> Result<ToolOutput, ToolError> {
        // A tool the server no longer lists is refused rather than called (no stale list).
        if !self
            .server
            .tools()
            .iter()
            .any(|t| t.remote == self.entry.remote)
        {
            return Err(ToolError::Failed(format!(
                "MCP server '{}' no longer offers the tool '{}'",
                self.server.cfg.name, self.entry.remote
            )));
        }
        self.server.call(&self.entry.remote, args).await
    }
}
