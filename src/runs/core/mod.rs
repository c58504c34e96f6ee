//! The run core: a run's life on this instance, from the request to its last event. Files
//! follow that life:
//!
//! - `manager` — the [`RunManager`](manager::RunManager) and what it holds,
//!   [`RunError`](manager::RunError), shutdown; `parts` — what it is made from
//!   ([`RunParts`](parts::RunParts)) and its one settings value
//!   ([`RunSettings`](parts::RunSettings));
//! - `request` — [`StartRun`](request::StartRun), what any API asks for; `start` — its checks,
//!   the conversation's one run slot, the run launched; `prepare` — the model bound, the history
//!   read (`history`, `images`), the first call admitted, the run stored with its query;
//! - `binding` — what a run is bound to (model, tools, settings, the conversation's agent);
//!   `engines` — which engine runs it (`react`, `dag`, `auto` routed in the run's task);
//! - `budgets` — each run's ledger and the admission every start asks `runs/budget/` for;
//! - `drive` — the run's task: the event sink, the panic fallback, `done` and the final state
//!   written together from the run's one [`RunOutcome`](crate::agent::RunOutcome);
//!   `progress` — its counters so far; `follow_up` — follow-ups that came after its loop closed;
//! - `continuation` — the run that goes on from a paused run's checkpoint with the caller's
//!   tool outputs;
//! - `control` — commands to live runs: cancel, interrupt and recall, approval decisions;
//! - `read` — a run's events, live or replayed from the database (`replay`: a page at a time);
//! - `log` (the per-run event log) and `persist` (the one
//!   [`EventWriter`](persist::EventWriter) that writes the events of all runs in shared
//!   transactions);
//! - `checks` — the text rules of docs/api.md.
//!
//! A run another instance owns is `runs/cluster/`'s: `control` and `read` hand such a run to
//! it, and nothing here imports from it.

pub mod binding;
mod budgets;
pub mod checks;
pub mod continuation;
pub mod control;
pub mod drive;
pub mod engines;
pub mod follow_up;
pub mod history;
pub mod images;
pub mod log;
pub mod manager;
pub mod parts;
pub mod persist;
mod prepare;
pub mod progress;
mod read;
pub mod replay;
pub mod request;
mod start;
