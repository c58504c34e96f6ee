//! Runs outlive connections: the [`RunManager`] owns every running agent (one tokio task per
//! run, a cancellation token, an [`EventLog`] that SSE subscribers replay and follow, the
//! per-conversation interrupt queues) and persists runs, events and messages through the store;
//! one shared [`persist::EventWriter`] writes the events of all runs.

pub mod log;
pub mod manager;
pub mod persist;
pub mod replay;
pub mod setup;

pub use log::{EventLog, LoggedEvent};
pub use manager::{EventObserver, LiveRun, RunError, RunManager, StartRun};
