//! Runs outlive connections. The [`RunManager`] owns every running agent — one tokio task per
//! run, a cancellation token, an [`EventLog`] that SSE subscribers replay and follow, the
//! per-conversation interrupt queues — and is the one API the HTTP handlers (any API) call:
//! each handler makes one call here. Files follow a run's life:
//!
//! - `manager` — the [`RunManager`] and what it holds, [`RunError`], shutdown;
//! - `start` — [`StartRun`] (a conversation, [`ConversationRef::Existing`] or
//!   [`ConversationRef::New`], and the query), checks, the run's task spawned;
//! - `binding` — what a run is bound to (model, tools, settings, the conversation's agent);
//! - `budget` — budgets per tenant and the admission of new runs; `ledger` — the wrapper every
//!   LLM call of a run passes through: reservation, cost, settlement, usage record;
//! - `engines` — which engine runs it (`react`, `dag`, `auto` routed in the run's task);
//! - `drive` — the task: the event sink, the panic fallback, `done` and the final state written
//!   together from the run's one [`RunOutcome`](crate::agent::RunOutcome);
//! - `control` — commands to live runs: cancel, interrupt and recall, approval decisions;
//! - `remote` — the same commands for runs another instance owns (docs/deployment.md), as rows, and
//!   `commands` — the owner's side of them (woken by `LISTEN/NOTIFY`, re-read on a tick);
//! - `follow` — the events of a run another instance owns, from the database, followed live;
//! - `read` — a run's events, live or replayed from the database (`replay`: a page at a time);
//! - `recover` — runs taken over (a crash left them `running`, or their lease lapsed): resumed
//!   from their checkpoint, or failed with the same fallback tail;
//! - `lease` — the lease task: heartbeat, renewals, lost runs stopped, the sweeper (docs/deployment.md);
//! - `catalog` — the agents a run can be asked for: the configured ones and each tenant's own,
//!   versioned in the store; `agents` — making, changing and deleting a tenant's agents;
//! - `conversations` — creating (model and tools checked) and deleting (run stopped first);
//! - `session` — the verbs every API's handler calls to map a request onto conversations and
//!   runs, protocol aside: attach a request to a thread ([`session::Thread`]: a new or stored
//!   conversation, a client's thread id, or after a run), answer a waiting run, stop and
//!   wait, delete; a facade's record is stored in the run's start transaction;
//! - `checks` — the text rules of docs/api.md;
//! - `log` (the per-run event log) and `persist` (the one [`persist::EventWriter`] that writes
//!   the events of all runs in shared transactions).

mod agents;
mod binding;
pub mod budget;
pub mod budget_types;
pub mod catalog;
pub mod checks;
mod commands;
mod continuation;
mod control;
mod conversations;
mod drive;
mod engines;
mod follow;
pub mod follow_up;
mod history;
pub mod images;
pub mod lease;
mod lease_types;
pub mod ledger;
pub mod log;
pub mod manager;
pub mod persist;
pub mod progress;
mod read;
mod recover;
mod remote;
pub mod replay;
mod request;
pub mod session;
mod start;
#[cfg(test)]
mod tests;

pub use agents::{MAX_AGENT_FIELD_CHARS, MAX_AGENT_TOOLS};
pub use budget_types::{Budgets, Clock};
pub use catalog::{AgentSource, Catalog, CatalogAgent, CatalogError};
pub use continuation::check_caller_tools;
pub use control::Accepted;
pub use history::PriorTurn;
pub use lease_types::{LeaseCounts, LeaseTimes};
pub use log::{EventLog, LoggedEvent};
pub use manager::{EventObserver, LiveRun, RunError, RunManager};
pub use recover::Recovered;
pub use request::{title_after, ConversationRef, StartRun, Started};
