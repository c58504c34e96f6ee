//! PreToolUse / PostToolUse hooks: the deterministic policy layer the LLM cannot
//! talk its way around. A [`HookRunner`] holds hooks sorted by ascending priority, each with a
//! tool-name glob filter, a timeout and a failure policy. The first block stops the Pre chain;
//! argument and observation rewrites chain.

pub mod approval;
pub mod builtin;
pub mod config;
pub mod webhook;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use globset::{Glob, GlobMatcher};
use serde_json::Value;

use super::events::EventSink;
/// The `[[hooks]]` entries and the failure policy are configuration values.
pub use crate::config::{FailurePolicy, HookSpec};

/// What a hook sees about a tool call.
#[derive(Clone, Debug)]
pub struct HookContext {
    pub run_id: String,
    pub conversation_id: String,
    pub iteration: u32,
    pub call_id: String,
    pub tool: String,
    /// The arguments as they stand after earlier hooks' rewrites.
    pub arguments: Value,
    /// The tool is marked as writing (`read_only` blocks it).
    pub tool_writes: bool,
    /// The tool is configured with `requires_approval` (docs/api.md).
    pub requires_approval: bool,
    /// Lets a hook emit events (the approval hook announces `approval_required`).
    pub events: Option<EventSink>,
}

/// What a PostToolUse hook sees: the call plus its outcome.
#[derive(Clone, Debug)]
pub struct PostContext {
    pub call: HookContext,
    /// The observation as it stands after earlier hooks' rewrites.
    pub observation: String,
    pub error: bool,
    /// The call was blocked by a PreToolUse hook (it did not run); Post hooks still see it so
    /// that `audit` records every call.
    pub blocked: bool,
    pub duration_ms: u64,
}

/// A PreToolUse hook's decision.
#[derive(Clone, Debug, PartialEq)]
pub enum PreVerdict {
    Allow,
    Block(String),
    /// Allow with these arguments instead.
    Rewrite(Value),
}

/// A PostToolUse hook's decision.
#[derive(Clone, Debug, PartialEq)]
pub enum PostVerdict {
    Keep,
    Rewrite(String),
}

#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum HookError {
    #[error("{0}")]
    Failed(String),
    #[error("timed out")]
    Timeout,
}

#[async_trait]
pub trait Hook: Send + Sync {
    fn name(&self) -> &str;
    async fn pre_tool_use(&self, _ctx: &HookContext) -> Result<PreVerdict, HookError> {
        Ok(PreVerdict::Allow)
    }
    async fn post_tool_use(&self, _ctx: &PostContext) -> Result<PostVerdict, HookError> {
        Ok(PostVerdict::Keep)
    }
}

/// A hook with its placement.
#[derive(Clone)]
pub struct HookEntry {
    pub hook: Arc<dyn Hook>,
    pub priority: i32,
    filter: Option<GlobMatcher>,
    pub timeout: Duration,
    pub policy: FailurePolicy,
}

impl HookEntry {
    /// A hook for every tool, priority 0, 5 s timeout, fail-open.
    pub fn new(hook: Arc<dyn Hook>) -> Self {
        Self {
            hook,
            priority: 0,
            filter: None,
            timeout: Duration::from_secs(5),
            policy: FailurePolicy::FailOpen,
        }
    }
    pub fn priority(mut self, p: i32) -> Self {
        self.priority = p;
        self
    }
    /// Only tools whose name matches this glob (`*`, `?`, `[a-z]`).
    pub fn filter(mut self, glob: &str) -> Result<Self, globset::Error> {
        self.filter = Some(Glob::new(glob)?.compile_matcher());
        Ok(self)
    }
    pub fn timeout(mut self, t: Duration) -> Self {
        self.timeout = t;
        self
    }
    pub fn policy(mut self, p: FailurePolicy) -> Self {
        self.policy = p;
        self
    }
    fn applies_to(&self, tool: &str) -> bool {
        self.filter.as_ref().is_none_or(|m| m.is_match(tool))
    }
}

/// The outcome of the Pre chain.
#[derive(Clone, Debug, PartialEq)]
pub enum PreOutcome {
    /// Run the tool with these (possibly rewritten) arguments.
    Allowed(Value),
    /// Do not run it; the LLM sees this reason.
    Blocked(String),
}

/// The outcome of the Post chain.
#[derive(Clone, Debug, PartialEq)]
pub struct PostOutcome {
    pub observation: String,
    /// A fail-closed hook failed: the observation is an error.
    pub error: bool,
}

/// Runs hooks in ascending priority (stable for equal priorities).
#[derive(Clone, Default)]
pub struct HookRunner {
    entries: Vec<HookEntry>,
}

impl HookRunner {
    pub fn new(mut entries: Vec<HookEntry>) -> Self {
        entries.sort_by_key(|e| e.priority);
        Self { entries }
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Runs every matching PreToolUse hook. `ctx.arguments` is updated by rewrites.
    pub async fn pre_tool_use(&self, ctx: &mut HookContext) -> PreOutcome {
        for entry in self.entries.iter().filter(|e| e.applies_to(&ctx.tool)) {
            let result = tokio::time::timeout(entry.timeout, entry.hook.pre_tool_use(ctx))
                .await
                .unwrap_or(Err(HookError::Timeout));
            match result {
                Ok(PreVerdict::Allow) => {}
                Ok(PreVerdict::Rewrite(args)) => ctx.arguments = args,
                Ok(PreVerdict::Block(reason)) => return PreOutcome::Blocked(reason),
                Err(e) => {
                    tracing::warn!(hook = entry.hook.name(), tool = %ctx.tool, error = %e, "PreToolUse hook failed");
                    if entry.policy == FailurePolicy::FailClosed {
                        return PreOutcome::Blocked(format!(
                            "hook '{}' failed ({e}) and is configured fail-closed",
                            entry.hook.name()
                        ));
                    }
                }
            }
        }
        PreOutcome::Allowed(ctx.arguments.clone())
    }

    /// Runs every matching PostToolUse hook; observation rewrites chain. The outcome takes the
    /// observation; the context (the call) stays with the caller.
    pub async fn post_tool_use(&self, ctx: &mut PostContext) -> PostOutcome {
        let mut error = ctx.error;
        for entry in self.entries.iter().filter(|e| e.applies_to(&ctx.call.tool)) {
            let result = tokio::time::timeout(entry.timeout, entry.hook.post_tool_use(ctx))
                .await
                .unwrap_or(Err(HookError::Timeout));
            match result {
                Ok(PostVerdict::Keep) => {}
                Ok(PostVerdict::Rewrite(obs)) => ctx.observation = obs,
                Err(e) => {
                    tracing::warn!(hook = entry.hook.name(), tool = %ctx.call.tool, error = %e, "PostToolUse hook failed");
                    if entry.policy == FailurePolicy::FailClosed {
                        error = true;
                        ctx.observation = format!(
                            "Error: the result was withheld because hook '{}' failed ({e}) and is configured fail-closed",
                            entry.hook.name()
                        );
                        break;
                    }
                }
            }
        }
        PostOutcome {
            observation: std::mem::take(&mut ctx.observation),
            error,
        }
    }
}
