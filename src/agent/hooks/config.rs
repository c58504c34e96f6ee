//! [`build_hooks`]: turns the `[[hooks]]` entries of `config.toml` into a [`HookRunner`]. The
//! entries are checked by the configuration's one rule set ([`crate::config::plan_hooks`]);
//! this module only builds what a checked entry describes.

use std::sync::Arc;

use async_trait::async_trait;

use super::approval::{ApprovalBroker, ApprovalHook, DEFAULT_APPROVAL_TIMEOUT};
use super::builtin::{AuditHook, AuditSink, RateLimitHook, ReadOnlyHook, TruncateResultHook};
use super::webhook::WebhookHook;
use super::{
    FailurePolicy, Hook, HookContext, HookEntry, HookError, HookRunner, HookSpec, PostContext,
    PostVerdict, PreVerdict,
};
pub use crate::config::hooks::{APPROVAL_TIMEOUT_MARGIN, DEFAULT_HOOK_TIMEOUT};
use crate::config::{plan_hooks, HookKind, HookPlan};

/// A `[[hooks]]` entry that cannot be used. Messages name the entry (0-based, as in the file's
/// array order) and the field, e.g. `hooks[2].url: a webhook hook needs a url`.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum HookConfigError {
    /// The entry breaks a rule of [`plan_hooks`]; the text is the configuration error's.
    #[error("{0}")]
    Invalid(String),
    /// Audit hooks must not silently record nothing: with no sink, start-up fails. Pass
    /// [`TracingAuditSink`] to audit into the log instead of the store.
    ///
    /// [`TracingAuditSink`]: super::builtin::TracingAuditSink
    #[error("hooks[{index}]: kind \"audit\" needs an audit sink and none is available")]
    NoAuditSink { index: usize },
}

/// What built hooks need from the rest of the process.
#[derive(Clone)]
pub struct HookDeps {
    /// The store's audit sink; `None` makes any `audit` entry an error.
    pub audit: Option<Arc<dyn AuditSink>>,
    /// Shared with the HTTP handlers that decide approvals.
    pub approvals: Arc<ApprovalBroker>,
    /// Shared client for webhooks (connection pooling).
    pub http: reqwest::Client,
}

/// Gives a configured `name` to any hook, for logs and fail-closed messages.
struct Named {
    name: String,
    inner: Arc<dyn Hook>,
}

#[async_trait]
impl Hook for Named {
    fn name(&self) -> &str {
        &self.name
    }
    async fn pre_tool_use(&self, ctx: &HookContext) -> Result<PreVerdict, HookError> {
        self.inner.pre_tool_use(ctx).await
    }
    async fn post_tool_use(&self, ctx: &PostContext) -> Result<PostVerdict, HookError> {
        self.inner.post_tool_use(ctx).await
    }
}

/// Builds the runner for `[[hooks]]`. When some tool has `requires_approval` and no `approval`
/// entry is configured, an approval hook is added (docs/api.md: the flag alone must pause the
/// run) with the default timeout, fail-closed, at the highest priority so that the reviewer
/// sees the arguments after every rewrite and nothing runs after the approval. A configured
/// `approval` entry replaces it, including its `tools` filter and priority.
pub fn build_hooks(
    specs: &[HookSpec],
    deps: &HookDeps,
    any_tool_requires_approval: bool,
) -> Result<HookRunner, HookConfigError> {
    let plans = plan_hooks(specs).map_err(|e| HookConfigError::Invalid(e.to_string()))?;
    let mut entries = Vec::with_capacity(plans.len() + 1);
    for (index, plan) in plans.iter().enumerate() {
        entries.push(entry(index, plan, deps)?);
    }
    let has_approval = plans
        .iter()
        .any(|p| matches!(p.kind, HookKind::Approval { .. }));
    if any_tool_requires_approval && !has_approval {
        let hook = ApprovalHook::new(Arc::clone(&deps.approvals), DEFAULT_APPROVAL_TIMEOUT);
        entries.push(
            HookEntry::new(Arc::new(hook))
                .priority(i32::MAX)
                .timeout(DEFAULT_APPROVAL_TIMEOUT + APPROVAL_TIMEOUT_MARGIN)
                .policy(FailurePolicy::FailClosed),
        );
    }
    Ok(HookRunner::new(entries))
}

/// The hook a checked entry describes, with its placement.
fn entry(index: usize, plan: &HookPlan, deps: &HookDeps) -> Result<HookEntry, HookConfigError> {
    let hook: Arc<dyn Hook> = match &plan.kind {
        HookKind::ReadOnly => Arc::new(ReadOnlyHook),
        HookKind::Audit => {
            let sink = deps
                .audit
                .clone()
                .ok_or(HookConfigError::NoAuditSink { index })?;
            Arc::new(AuditHook::new(sink))
        }
        HookKind::Approval { timeout } => {
            Arc::new(ApprovalHook::new(Arc::clone(&deps.approvals), *timeout))
        }
        HookKind::RateLimit { max_calls, window } => {
            Arc::new(RateLimitHook::new(*max_calls, *window))
        }
        HookKind::Truncate { max_chars } => Arc::new(TruncateResultHook::new(*max_chars)),
        HookKind::Webhook { url } => Arc::new(WebhookHook::new(url.clone(), deps.http.clone())),
    };
    let hook = match &plan.name {
        Some(name) => Arc::new(Named {
            name: name.clone(),
            inner: hook,
        }) as Arc<dyn Hook>,
        None => hook,
    };
    let entry = HookEntry::new(hook)
        .priority(plan.priority)
        .timeout(plan.timeout)
        .policy(plan.policy);
    match &plan.tools {
        // The glob compiled when the plan was checked.
        Some(glob) => entry
            .filter(glob)
            .map_err(|e| HookConfigError::Invalid(format!("hooks[{index}].tools: {e}"))),
        None => Ok(entry),
    }
}
