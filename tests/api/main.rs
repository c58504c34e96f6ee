//! Black-box tests: the HTTP API (docs/api.md) through the real router on `127.0.0.1:0`, and
//! the real `reagent` binary as a child process. One test binary (one link) for all of them;
//! `cargo test --test api <module>::` runs one part, e.g. `cargo test --test api races::`.
//!
//! - [`http`]: the API's scenarios, most of them on both backends (`sqlite::`/`postgres::`);
//! - [`faults`]: LLM, tool and hook faults and the end-of-run contract;
//! - [`races`]: interrupt/cancel/start/recall races on both backends;
//! - [`clients`]: disconnects, reconnect storms, readers that never read, 1 000 subscribers;
//! - [`conformance`]: a scenario's every answer and event against the OpenAPI document;
//! - [`security`]: auth and tenancy on every route, SSRF, paths, injection, limits, secrets;
//! - [`binary`]: SIGTERM with a run in flight, restart recovery after `kill -9`;
//! - [`crash`]: `kill -9` under continuous load, nothing accepted lost (both backends);
//! - [`instances`]: several real instances on one PostgreSQL database: takeover, fencing,
//!   `/api/instances`, SIGTERM hand-over (docs/deployment.md);
//! - [`openai`]: the OpenAI-compatible API with the official clients, drops, tenancy, bad input;
//! - [`frontends`]: AG-UI and the AI SDK stream with their official clients, tenancy, resumes;
//! - [`a2a`]: each agent as an A2A agent, with the official `a2a-sdk` and `@a2a-js/sdk` clients,
//!   both wire versions, tenancy, input-required, resubscribe;
//! - [`otel`]: OpenTelemetry traces to an in-process OTLP receiver, `traceparent` in and out;
//! - [`dag`]: DAG mode: its SSE sequence, resume mid-execution, replay after restart;
//! - [`a2a_client`]: remote A2A agents as tools, against an agent built on the official `a2a-sdk`;
//! - [`cli`]: start-up configuration errors, `check-config`, `serve` and SIGTERM;
//! - [`instances`]: several instances on one PostgreSQL database (docs/deployment.md).
//!
//! Helpers: `tests/support/` (shared with `tests/core`). `TEST_LOG=1` shows the logs.

// Test code may panic on what it did not expect (Cargo.toml [lints]).
#![allow(clippy::unwrap_used)]

#[macro_use]
#[path = "../support/mod.rs"]
mod support;

mod a2a;
mod a2a_client;
#[cfg(unix)]
mod binary;
mod cli;
mod clients;
mod conformance;
#[cfg(unix)]
mod crash;
mod dag;
mod faults;
mod frontends;
mod http;
#[cfg(unix)]
mod instances;
mod mcp;
mod mcp_server;
mod openai;
mod otel;
mod races;
mod security;
