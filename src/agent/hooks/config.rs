//! [`build_hooks`]: turns the `[[hooks]]` entries of `config.toml` into a [`HookRunner`], and
//! [`validate_specs`], which checks them without building anything so configuration loading can
//! reject a bad file at start-up with a message naming the entry and the field.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use globset::Glob;

use super::approval::{ApprovalBroker, ApprovalHook, DEFAULT_APPROVAL_TIMEOUT};
use super::builtin::{AuditHook, AuditSink, RateLimitHook, ReadOnlyHook, TruncateResultHook};
use super::webhook::WebhookHook;
use super::{
    FailurePolicy, Hook, HookContext, HookEntry, HookError, HookRunner, HookSpec, PostContext,
    PostVerdict, PreVerdict,
};

/// How much longer than its approval timeout the runner lets the approval hook run, so the
/// hook's own "approval timed out" verdict wins over a generic hook timeout.
pub const APPROVAL_TIMEOUT_MARGIN: Duration = Duration::from_secs(5);

/// Default per-hook timeout when `timeout_ms` is absent.
pub const DEFAULT_HOOK_TIMEOUT: Duration = Duration::from_millis(5000);

/// A `[[hooks]]` entry that cannot be used. Messages name the entry (0-based, as in the file's
/// array order) and the field, e.g. `hooks[2]: kind "webhook" needs url`.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum HookConfigError {
    #[error("hooks[{index}]: unknown kind \"{kind}\" (expected read_only, approval, audit, rate_limit, truncate_result or webhook)")]
    UnknownKind { index: usize, kind: String },
    #[error("hooks[{index}]: kind \"{kind}\" needs {field}")]
    Missing {
        index: usize,
        kind: String,
        field: &'static str,
    },
    #[error("hooks[{index}]: {field} does not apply to kind \"{kind}\"")]
    Unused {
        index: usize,
        kind: String,
        field: &'static str,
    },
    #[error("hooks[{index}].{field}: {message}")]
    Invalid {
        index: usize,
        field: &'static str,
        message: String,
    },
    /// Audit hooks must not silently record nothing: with no sink, start-up fails. Pass
    /// [`TracingAuditSink`] to audit into the log instead of the store.
    #[error("hooks[{index}]: kind \"audit\" needs an audit sink and none is available")]
    NoAuditSink { index: usize },
}

/// What each hook kind is made of once its spec is checked.
enum Kind {
    ReadOnly,
    Approval { timeout: Duration },
    Audit,
    RateLimit { max_calls: u32, window: Duration },
    Truncate { max_chars: usize },
    Webhook { url: String },
}

/// A checked spec: everything [`build_hooks`] needs, no dependency yet.
struct Checked {
    kind: Kind,
    timeout: Duration,
}

/// Which kind-specific fields a spec set, to reject the ones its kind ignores (usually a typo
/// or a misplaced line that would otherwise be silently ignored).
fn kind_fields(spec: &HookSpec) -> [(&'static str, bool); 5] {
    [
        ("url", spec.url.is_some()),
        ("max_calls", spec.max_calls.is_some()),
        ("window_s", spec.window_s.is_some()),
        ("max_chars", spec.max_chars.is_some()),
        ("approval_timeout_s", spec.approval_timeout_s.is_some()),
    ]
}

fn check(index: usize, spec: &HookSpec) -> Result<Checked, HookConfigError> {
    let kind = spec.kind.as_str();
    let missing = |field| HookConfigError::Missing {
        index,
        kind: kind.to_string(),
        field,
    };
    let invalid = |field, message: &str| HookConfigError::Invalid {
        index,
        field,
        message: message.to_string(),
    };
    let (checked_kind, own_fields): (Kind, &[&str]) = match kind {
        "read_only" => (Kind::ReadOnly, &[]),
        "audit" => (Kind::Audit, &[]),
        "approval" => {
            let secs = spec
                .approval_timeout_s
                .unwrap_or(DEFAULT_APPROVAL_TIMEOUT.as_secs());
            if secs == 0 {
                return Err(invalid("approval_timeout_s", "must be greater than 0"));
            }
            let timeout = Duration::from_secs(secs);
            (Kind::Approval { timeout }, &["approval_timeout_s"])
        }
        "rate_limit" => {
            let max_calls = spec.max_calls.ok_or_else(|| missing("max_calls"))?;
            if max_calls == 0 {
                return Err(invalid("max_calls", "must be greater than 0"));
            }
            let window_s = spec.window_s.ok_or_else(|| missing("window_s"))?;
            if window_s == 0 {
                return Err(invalid("window_s", "must be greater than 0"));
            }
            let window = Duration::from_secs(window_s);
            (
                Kind::RateLimit { max_calls, window },
                &["max_calls", "window_s"],
            )
        }
        "truncate_result" => {
            let max_chars = spec.max_chars.ok_or_else(|| missing("max_chars"))?;
            if max_chars == 0 {
                return Err(invalid("max_chars", "must be greater than 0"));
            }
            (Kind::Truncate { max_chars }, &["max_chars"])
        }
        "webhook" => {
            let url = spec.url.clone().ok_or_else(|| missing("url"))?;
            match url::Url::parse(&url) {
                Ok(u) if matches!(u.scheme(), "http" | "https") => {}
                Ok(_) => return Err(invalid("url", "must be an http or https URL")),
                Err(e) => return Err(invalid("url", &format!("not a valid URL ({e})"))),
            }
            (Kind::Webhook { url }, &["url"])
        }
        _ => {
            return Err(HookConfigError::UnknownKind {
                index,
                kind: kind.to_string(),
            })
        }
    };
    if let Some((field, _)) = kind_fields(spec)
        .into_iter()
        .find(|(field, set)| *set && !own_fields.contains(field))
    {
        return Err(HookConfigError::Unused {
            index,
            kind: kind.to_string(),
            field,
        });
    }
    if let Some(glob) = &spec.tools {
        Glob::new(glob).map_err(|e| invalid("tools", &e.kind().to_string()))?;
    }
    let timeout = match (spec.timeout_ms, &checked_kind) {
        (Some(0), _) => return Err(invalid("timeout_ms", "must be greater than 0")),
        (Some(ms), Kind::Approval { timeout }) if Duration::from_millis(ms) <= *timeout => {
            return Err(invalid(
                "timeout_ms",
                "must be longer than approval_timeout_s, or the wait for a reviewer is cut short",
            ))
        }
        (Some(ms), _) => Duration::from_millis(ms),
        (None, Kind::Approval { timeout }) => *timeout + APPROVAL_TIMEOUT_MARGIN,
        (None, _) => DEFAULT_HOOK_TIMEOUT,
    };
    Ok(Checked {
        kind: checked_kind,
        timeout,
    })
}

/// Checks every `[[hooks]]` entry without building anything (for configuration validation at
/// start-up). An `audit` entry passes here; whether a sink exists is [`build_hooks`]' concern.
pub fn validate_specs(specs: &[HookSpec]) -> Result<(), HookConfigError> {
    specs
        .iter()
        .enumerate()
        .try_for_each(|(i, spec)| check(i, spec).map(|_| ()))
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
/// entry is configured, an approval hook is added (SPEC §3.6: the flag alone must pause the
/// run) with the default timeout, fail-closed, at the highest priority so that the reviewer
/// sees the arguments after every rewrite and nothing runs after the approval. A configured
/// `approval` entry replaces it, including its `tools` filter and priority.
pub fn build_hooks(
    specs: &[HookSpec],
    deps: &HookDeps,
    any_tool_requires_approval: bool,
) -> Result<HookRunner, HookConfigError> {
    let mut entries = Vec::with_capacity(specs.len() + 1);
    for (index, spec) in specs.iter().enumerate() {
        let checked = check(index, spec)?;
        let hook: Arc<dyn Hook> = match checked.kind {
            Kind::ReadOnly => Arc::new(ReadOnlyHook),
            Kind::Audit => {
                let sink = deps
                    .audit
                    .clone()
                    .ok_or(HookConfigError::NoAuditSink { index })?;
                Arc::new(AuditHook::new(sink))
            }
            Kind::Approval { timeout } => {
                Arc::new(ApprovalHook::new(Arc::clone(&deps.approvals), timeout))
            }
            Kind::RateLimit { max_calls, window } => {
                Arc::new(RateLimitHook::new(max_calls, window))
            }
            Kind::Truncate { max_chars } => Arc::new(TruncateResultHook::new(max_chars)),
            Kind::Webhook { url } => Arc::new(WebhookHook::new(url, deps.http.clone())),
        };
        let hook = match &spec.name {
            Some(name) if !name.trim().is_empty() => Arc::new(Named {
                name: name.trim().to_string(),
                inner: hook,
            }) as Arc<dyn Hook>,
            _ => hook,
        };
        let mut entry = HookEntry::new(hook)
            .priority(spec.priority)
            .timeout(checked.timeout)
            .policy(spec.policy);
        if let Some(glob) = &spec.tools {
            entry = entry.filter(glob).map_err(|e| HookConfigError::Invalid {
                index,
                field: "tools",
                message: e.kind().to_string(),
            })?;
        }
        entries.push(entry);
    }
    if any_tool_requires_approval && !specs.iter().any(|s| s.kind == "approval") {
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
