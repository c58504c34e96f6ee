//! Several instances on one PostgreSQL database (SPEC §11), each a real child process
//! (`tests/support/cluster.rs`).
//!
//! - [`commands`]: every request about a run (stream, interrupt, recall, approval, cancel,
//!   delete) through an instance that does not run it.

mod commands;
