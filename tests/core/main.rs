//! The library's parts tested in-process, without the HTTP layer: the engine with a scripted
//! LLM, the OpenAI-compatible client, the mock provider, the run manager, the store and its
//! event writer on both backends, the network tools, and the parsers (properties and the fuzz
//! smoke). One test binary (one link); `cargo test --test core <module>::` runs one part.
//!
//! - [`engine`], [`safeguards`]: `ReActAgent::run` and its safeguards (selection, reflection,
//!   cycles, checklist, hooks, context guard, interrupts);
//! - [`continuity`]: thinking models' reasoning and signatures sent back to the same model;
//! - [`recovery`]: tool calls written in the content, JSON-mode aliases, run-unique call ids;
//! - [`llm_client`]: the real client against the in-process fake server; [`llm_http2`]: the
//!   same over h2c (`LLM_HTTP2`);
//! - [`mock_provider`]: `reagent mock-provider` through the real client;
//! - [`runs`]: `RunManager` on a real SQLite file;
//! - [`budgets`]: reservations, admission and recovery of `[[budgets]]`, both backends;
//! - [`store`], [`persist`]: the store suite and the shared event writer, both backends;
//! - [`tools`]: `http_request`'s SSRF guard and response cap, `[[tools.http]]` tools;
//! - [`properties`], [`fuzz_smoke`]: the parsers of untrusted input never panic.
//!
//! Helpers: `tests/support/` (shared with `tests/api`). `TEST_LOG=1` shows the logs.

// Test code may panic on what it did not expect (Cargo.toml [lints]).
#![allow(clippy::unwrap_used)]

#[macro_use]
#[path = "../support/mod.rs"]
mod support;

mod budgets;
mod continuity;
mod engine;
mod event_ids;
mod fuzz_smoke;
mod llm_client;
mod llm_http2;
mod mock_provider;
mod notify;
mod persist;
mod properties;
mod recovery;
mod resume;
mod runs;
mod safeguards;
mod storage;
mod store;
mod tools;
