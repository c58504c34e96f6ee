//! The built-in hooks (`read_only`, `rate_limit`, `truncate_result`, `audit`; the
//! `webhook` and `approval` kinds live in their own modules). Building them from `[[hooks]]` is
//! `config.rs`'s job.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;

use super::{Hook, HookContext, HookError, PostContext, PostVerdict, PreVerdict};

/// Blocks every tool marked as writing: the organisation-wide read-only switch.
#[derive(Debug, Default)]
pub struct ReadOnlyHook;

#[async_trait]
impl Hook for ReadOnlyHook {
    fn name(&self) -> &str {
        "read_only"
    }

    async fn pre_tool_use(&self, ctx: &HookContext) -> Result<PreVerdict, HookError> {
        Ok(if ctx.tool_writes {
            PreVerdict::Block(format!(
                "the organisation is in read-only mode: tool '{}' can modify data and is disabled",
                ctx.tool
            ))
        } else {
            PreVerdict::Allow
        })
    }
}

/// At most `max_calls` calls per tool name in any sliding `window`. One instance is shared by
/// every run using the runner, so the limit is process-wide per tool (it protects the service
/// behind the tool, not one conversation). A call counts once this hook allows it, even if a
/// later hook blocks it: the slot is spent conservatively rather than tracked across hooks.
pub struct RateLimitHook {
    pub max_calls: u32,
    pub window: Duration,
    /// Start times of the allowed calls still inside the window, per tool. Only touched
    /// synchronously: never held across an await.
    calls: Mutex<HashMap<String, VecDeque<Instant>>>,
}

impl RateLimitHook {
    pub fn new(max_calls: u32, window: Duration) -> Self {
        Self {
            max_calls,
            window,
            calls: Mutex::new(HashMap::new()),
        }
    }

    /// Records a call at `now` if allowed, or returns how long until a slot frees up. Taking the
    /// clock as a parameter keeps the window testable without sleeping.
    fn check_at(&self, tool: &str, now: Instant) -> Result<(), Duration> {
        // A poisoned lock only means another call panicked mid-update; the timestamps are
        // still usable.
        let mut calls = self.calls.lock().unwrap_or_else(|p| p.into_inner());
        let recent = calls.entry(tool.to_string()).or_default();
        while recent
            .front()
            .is_some_and(|t| now.saturating_duration_since(*t) >= self.window)
        {
            recent.pop_front();
        }
        if recent.len() < self.max_calls as usize {
            recent.push_back(now);
            return Ok(());
        }
        let oldest = recent.front().copied().unwrap_or(now);
        Err(self
            .window
            .saturating_sub(now.saturating_duration_since(oldest)))
    }
}

#[async_trait]
impl Hook for RateLimitHook {
    fn name(&self) -> &str {
        "rate_limit"
    }

    async fn pre_tool_use(&self, ctx: &HookContext) -> Result<PreVerdict, HookError> {
        Ok(match self.check_at(&ctx.tool, Instant::now()) {
            Ok(()) => PreVerdict::Allow,
            Err(wait) => PreVerdict::Block(format!(
                "rate limit reached for tool '{}': at most {} call{} per {} s; retry in {} s",
                ctx.tool,
                self.max_calls,
                if self.max_calls == 1 { "" } else { "s" },
                self.window.as_secs_f64(),
                wait.as_secs_f64().ceil().max(1.0)
            )),
        })
    }
}

/// Caps the observation the LLM sees, on a character boundary, saying how much was cut so the
/// model knows the result is partial.
#[derive(Debug)]
pub struct TruncateResultHook {
    pub max_chars: usize,
}

impl TruncateResultHook {
    pub fn new(max_chars: usize) -> Self {
        Self { max_chars }
    }

    /// `None` when the text already fits.
    pub fn truncate(&self, text: &str) -> Option<String> {
        let (cut, _) = text.char_indices().nth(self.max_chars)?;
        let removed = text[cut..].chars().count();
        Some(format!(
            "{}\n[… truncated {removed} characters]",
            &text[..cut]
        ))
    }
}

#[async_trait]
impl Hook for TruncateResultHook {
    fn name(&self) -> &str {
        "truncate_result"
    }

    async fn post_tool_use(&self, ctx: &PostContext) -> Result<PostVerdict, HookError> {
        Ok(match self.truncate(&ctx.observation) {
            Some(cut) => PostVerdict::Rewrite(cut),
            None => PostVerdict::Keep,
        })
    }
}

/// How an audited call ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AuditOutcome {
    Ok,
    Error,
    Blocked,
}

/// One row of the audit trail: every tool call, including blocked ones.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AuditRecord {
    pub run_id: String,
    pub conversation_id: String,
    pub call_id: String,
    pub tool: String,
    /// The arguments the tool received (after rewrites).
    pub arguments: Value,
    /// Bytes of the observation as it stood when the audit hook ran (so hooks with a lower
    /// priority, e.g. `truncate_result`, have already applied).
    pub result_size: usize,
    pub duration_ms: u64,
    pub outcome: AuditOutcome,
    pub at: DateTime<Utc>,
}

/// Where audit records go. The store implements it; a failing sink should log, not fail the
/// call (the audit hook has no error path of its own).
#[async_trait]
pub trait AuditSink: Send + Sync {
    async fn record(&self, record: AuditRecord);
}

/// Keeps records in memory: for tests and local use without a database.
#[derive(Debug, Default)]
pub struct MemoryAuditSink {
    records: Mutex<Vec<AuditRecord>>,
}

impl MemoryAuditSink {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn records(&self) -> Vec<AuditRecord> {
        self.records
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

#[async_trait]
impl AuditSink for MemoryAuditSink {
    async fn record(&self, record: AuditRecord) {
        self.records
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(record);
    }
}

/// Writes audit records to the log (`target = "reagent::audit"`): a sink for deployments that
/// want the trail without a database table.
#[derive(Debug, Default)]
pub struct TracingAuditSink;

#[async_trait]
impl AuditSink for TracingAuditSink {
    async fn record(&self, r: AuditRecord) {
        tracing::info!(target: "reagent::audit", run_id = %r.run_id, conversation_id = %r.conversation_id,
            call_id = %r.call_id, tool = %r.tool, arguments = %r.arguments, result_size = r.result_size,
            duration_ms = r.duration_ms, outcome = ?r.outcome, "tool call");
    }
}

/// PostToolUse: records every call (blocked ones too) in the sink; never changes anything.
pub struct AuditHook {
    pub sink: Arc<dyn AuditSink>,
}

impl AuditHook {
    pub fn new(sink: Arc<dyn AuditSink>) -> Self {
        Self { sink }
    }
}

#[async_trait]
impl Hook for AuditHook {
    fn name(&self) -> &str {
        "audit"
    }

    async fn post_tool_use(&self, ctx: &PostContext) -> Result<PostVerdict, HookError> {
        let outcome = if ctx.blocked {
            AuditOutcome::Blocked
        } else if ctx.error {
            AuditOutcome::Error
        } else {
            AuditOutcome::Ok
        };
        self.sink
            .record(AuditRecord {
                run_id: ctx.call.run_id.clone(),
                conversation_id: ctx.call.conversation_id.clone(),
                call_id: ctx.call.call_id.clone(),
                tool: ctx.call.tool.clone(),
                arguments: ctx.call.arguments.clone(),
                result_size: ctx.observation.len(),
                duration_ms: ctx.duration_ms,
                outcome,
                at: Utc::now(),
            })
            .await;
        Ok(PostVerdict::Keep)
    }
}

#[cfg(test)]
mod tests;
