//! reagent: an HTTP service that runs ReAct tool-using LLM agents and streams their work over
//! Server-Sent Events.
//!
//! Layout, one entry per module, from the outside in:
//! - [`server`] — the HTTP layer: routes and handlers (each extracts, makes one call, maps),
//!   SSE, auth, JSON errors, metrics, OpenAPI.
//! - [`runs`] — the run manager, the API handlers call: one task per run, its event log and
//!   subscribers, interrupts, persistence through one shared event writer, restart recovery.
//! - [`store`] — every SQL statement (sqlx; SQLite and PostgreSQL) behind one `Store`.
//! - [`agent`] — the ReAct engine: loop (native and JSON modes), safeguards, hooks, context
//!   guard, interrupts, synthesis. Pure library: no HTTP or SQL types.
//! - [`dag`] — DAG mode: a planner whose steps run concurrently as ReAct agents, an analyser,
//!   re-plans, one answer; no HTTP or SQL, the same event stream as the ReAct engine.
//! - [`llm`] — the `Llm` trait, the provider clients (OpenAI-compatible chat completions and
//!   Anthropic's native Messages API), structured output, `extract_json`, the model registry
//!   (filled by [`app`]).
//! - [`tools`] — the `Tool` trait, registry, built-in and HTTP tools, MCP tools, remote A2A
//!   agents as tools, the SSRF guard.
//! - [`config`] — typed configuration, loaded once from `config.toml` then the environment;
//!   imports only `domain`.
//! - [`domain`] — the values every layer shares (run status, mode, message role and kind, SSE
//!   event names, artifact references, model abilities); imports nothing of the crate.
//! - [`app`] — the one place that assembles the service from a [`config::Config`] and runs it
//!   until a shutdown signal.
//! - [`eval`] — `reagent eval`: an agent over a task file, against a running or in-process
//!   service, judged answer by answer.
//! - [`mcp_stdio`] — `reagent mcp`: the `/mcp` server of a running service over stdio, for
//!   clients that launch MCP servers as processes.
//! - [`net`] — the listening socket the server and the test fakes share.
//! - [`telemetry`] — OpenTelemetry: a run as one trace (`invoke_agent`, `chat`, `execute_tool`
//!   spans after the GenAI conventions), `traceparent` in and out, the OTLP/HTTP export.
//! - [`testing`] — fakes: `ScriptedLlm`, an in-process fake OpenAI-compatible server and the
//!   mock provider.

pub mod agent;
pub mod app;
pub mod config;
pub mod dag;
pub mod domain;
pub mod eval;
pub mod llm;
pub mod mcp_stdio;
pub mod net;
pub mod runs;
pub mod server;
pub mod store;
pub mod telemetry;
pub mod testing;
pub mod tools;
