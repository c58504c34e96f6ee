//! [`AppState`]: what every handler can reach, built by [`crate::app::App::build`].

use std::sync::Arc;
use std::time::Duration;

use super::auth::Auth;
use super::metrics::Metrics;
use crate::config::Config;
use crate::llm::registry::ModelRegistry;
use crate::runs::RunManager;
use crate::store::Store;
use crate::tools::mcp::McpManager;

/// What every handler can reach. Cheap to clone.
#[derive(Clone)]
pub struct AppState {
    pub config: Arc<Config>,
    pub store: Store,
    pub runs: Arc<RunManager>,
    pub models: ModelRegistry,
    pub metrics: Metrics,
    pub auth: Arc<Auth>,
    /// The `[[mcp]]` servers (none configured: an empty manager).
    pub mcp: Arc<McpManager>,
    /// Quiet time before an SSE `: keep-alive` comment (15 s; shorter in tests).
    pub keep_alive: Duration,
}
