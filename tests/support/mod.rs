//! The one helper module of both test binaries, `tests/api` (black-box: the HTTP API through
//! the real router, the real binary as a child process) and `tests/core` (the engine, LLM
//! client, run manager, store and tools as a library). Each binary includes it with
//! `#[macro_use] #[path = "../support/mod.rs"] mod support;`.
//!
//! - [`app`]: `TestApp`, the real router on `127.0.0.1:0` with a scripted model and test tools;
//! - [`backends`]: a fresh SQLite or PostgreSQL database per scenario, `on_both_backends!`;
//! - [`child`]: `Server`, the real `reagent` binary as a child process;
//! - [`cluster`]: `Cluster`, several `reagent` processes on one PostgreSQL database;
//! - [`engine`]: `Harness`, one `ReActAgent` run and the events it emitted;
//! - [`sse`]: a small SSE parser and `labels`;
//! - [`target`]: a local HTTP server counting its requests, for the network tools;
//! - [`tools`]: `FakeTool`, the one configurable fake tool;
//! - [`wait`]: `eventually`, the one poll loop;
//! - [`fullfs`]: `SmallFs`, a small tmpfs a test fills to make database writes fail;
//! - [`log`]: `TEST_LOG=1` shows the service's logs (quiet otherwise);
//! - [`fuse`]: `charge`, a non-idempotent HTTP tool that counts its calls and kills or stops
//!   the calling instance as a call arrives, for at-most-once tests;
//! - [`lookup`]: `lookup`, an HTTP tool whose first call hangs, for calls in flight at a kill;
//! - [`otlp`]: `Collector`, an in-process OTLP/HTTP trace receiver;
//! - [`peers`]: where `scripts/peers.sh` installed the real MCP servers and OpenAI clients.

// Each binary uses part of the helpers.
#![allow(dead_code, unused_macros)]

pub mod app;
#[macro_use]
pub mod backends;
pub mod child;
pub mod cluster;
pub mod engine;
pub mod fullfs;
pub mod fuse;
pub mod log;
pub mod lookup;
pub mod otlp;
pub mod peers;
pub mod sse;
pub mod target;
pub mod tools;
pub mod wait;

pub use wait::eventually;
