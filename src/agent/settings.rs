//! [`AgentConfig`]: the engine's settings for one agent. They are the `[react]` section itself
//! (docs/configuration.md), declared once in [`crate::config`] with the one home of each default, so nothing
//! copies them field by field. What varies per run rather than per deployment — a requested
//! mode, the conversation's system prompt — is set on the agent
//! ([`super::ReActAgent::with_mode`], [`super::ReActAgent::with_system_prompt`]).

pub use crate::config::ReactConfig as AgentConfig;
