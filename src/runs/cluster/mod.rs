//! Runs across instances (docs/deployment.md): every instance executes its runs under a lease
//! in the shared database, and any instance answers for any run.
//!
//! - `lease` — the lease task: heartbeat, renewals, lost runs stopped, the sweeper, leases
//!   released at shutdown;
//! - `recover` — runs taken over (a crash left them `running`, or their lease lapsed): resumed
//!   (`resume`: from their checkpoint, under a new epoch) or failed with the same fallback tail;
//! - `remote` — commands to runs another instance owns (cancel, interrupt, recall, stop), as
//!   rows; `commands` — the owner's side of them (woken by `LISTEN/NOTIFY`, re-read on a tick),
//!   and approval decisions taken elsewhere;
//! - `follow` — the events of a run another instance owns, from the database, followed live.
//!
//! It builds on the run core (`runs/core/`), which never imports from here.

pub mod commands;
pub mod follow;
pub mod lease;
pub mod recover;
pub mod remote;
mod resume;
