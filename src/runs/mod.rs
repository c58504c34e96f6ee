//! Runs outlive connections. The [`RunManager`] owns every running agent — one tokio task per
//! run, a cancellation token, an [`EventLog`] that SSE subscribers replay and follow, the
//! per-conversation interrupt queues — and is the one API the HTTP handlers (any API) call:
//! each handler makes one call here. Its rooms:
//!
//! ```text
//! runs/
//! ├── session/   the verbs every API's handler calls, protocol aside: attach a request to a
//! │              thread, answer a waiting run, stop and wait, delete
//! ├── core/      a run's life on this instance: made from parts and settings, checked,
//! │              prepared and started, driven, commanded, read; its event log and writer
//! ├── cluster/   runs across instances: leases, takeover and resume, commands to and from
//! │              the owning instance, following another instance's run
//! ├── budget/    budgets per tenant: the rules, the admission of new runs, each call's ledger
//! ├── catalog    the agents a run can be asked for: configured and each tenant's own;
//! │              agents — making, changing and deleting a tenant's agents
//! └── conversations  creating (model and tools checked) and deleting (run stopped first)
//! ```
//!
//! Imports run one way: `session`, `cluster` and the files here build on `core`; `core` builds
//! on `budget` and `catalog`, which know no run manager. Each room's `mod.rs` names its files.

mod agents;
pub mod budget;
pub mod catalog;
pub mod cluster;
mod conversations;
pub mod core;
pub mod session;
#[cfg(test)]
mod tests;

// The paths the rest of the crate uses, wherever in the rooms they live.
pub use self::core::continuation::check_caller_tools;
pub use self::core::control::Accepted;
pub use self::core::history::PriorTurn;
pub use self::core::log::{EventLog, LoggedEvent};
pub use self::core::manager::{LiveRun, RunError, RunManager};
pub use self::core::parts::{
    default_instance_id, EventObserver, LeaseTimes, RunParts, RunSettings, DEFAULT_FLUSH_INTERVAL,
};
pub use self::core::request::{title_after, ConversationRef, StartRun, Started};
pub use self::core::{manager, persist};
pub use agents::{MAX_AGENT_FIELD_CHARS, MAX_AGENT_TOOLS};
pub use budget::{ledger, BudgetStatus, Budgets, Clock};
pub use catalog::{AgentSource, Catalog, CatalogAgent, CatalogError};
pub use cluster::lease::LeaseCounts;
pub use cluster::recover::Recovered;
