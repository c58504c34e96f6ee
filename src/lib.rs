//! reagent: an HTTP service that runs ReAct tool-using LLM agents and streams their work over
//! Server-Sent Events.
//!
//! Layout (data flows one way, top to bottom):
//! - [`config`] — typed configuration, loaded once from `config.toml` then the environment.
//! - [`agent`] — the ReAct engine: loop (native and JSON modes), safeguards, hooks, context
//!   guard, interrupts, synthesis. Pure library: no HTTP or SQL types.
//! - [`llm`] — the `Llm` trait, the OpenAI-compatible client, structured output, `extract_json`.
//! - [`tools`] — the `Tool` trait, registry, built-in and HTTP tools.
//! - [`testing`] — fakes shared by tests, benches and the mock provider: `ScriptedLlm` and an
//!   in-process fake OpenAI-compatible server.

pub mod agent;
pub mod config;
pub mod llm;
pub mod runs;
pub mod server;
pub mod store;
pub mod testing;
pub mod tools;
