//! `[[hooks]]`: the entries as written ([`HookSpec`]), the one set of rules they
//! must follow, and what a checked entry means ([`HookPlan`]) — the hook kind with its settings
//! and the placement, defaults applied. Configuration loading rejects a bad file with these
//! rules; the hook builder (`agent::hooks::config`) turns plans into hooks.

use std::time::Duration;

use globset::Glob;
use serde::{Deserialize, Serialize};

use super::validate::{at_least, http_url};
use super::ConfigError;

/// The hook kinds.
pub const HOOK_KINDS: &[&str] = &[
    "read_only",
    "approval",
    "audit",
    "rate_limit",
    "truncate_result",
    "webhook",
];

/// Default per-hook timeout when `timeout_ms` is absent.
pub const DEFAULT_HOOK_TIMEOUT: Duration = Duration::from_millis(5000);

/// How long an approval waits for a reviewer when `approval_timeout_s` is absent.
pub const DEFAULT_APPROVAL_TIMEOUT: Duration = Duration::from_secs(120);

/// How much longer than its approval timeout the runner lets the approval hook run, so the
/// hook's own "approval timed out" verdict wins over a generic hook timeout.
pub const APPROVAL_TIMEOUT_MARGIN: Duration = Duration::from_secs(5);

/// What happens when a hook errors or times out.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailurePolicy {
    /// Ignore the failure: the call goes on as if the hook had allowed it.
    #[default]
    FailOpen,
    /// Treat the failure as a block (Pre) or an error observation (Post).
    FailClosed,
}

/// One `[[hooks]]` entry of `config.toml` as written: the kind, the placement and the kind's
/// own settings.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct HookSpec {
    /// `read_only`, `approval`, `audit`, `rate_limit`, `truncate_result` or `webhook`.
    pub kind: String,
    /// A name for logs; defaults to the kind.
    #[serde(default)]
    pub name: Option<String>,
    /// Tool-name glob; all tools when absent.
    #[serde(default)]
    pub tools: Option<String>,
    #[serde(default)]
    pub priority: i32,
    /// Default 5000 (the approval hook defaults to its approval timeout instead).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    #[serde(default)]
    pub policy: FailurePolicy,
    /// `webhook`: the URL to POST the context to.
    #[serde(default)]
    pub url: Option<String>,
    /// `rate_limit`: calls allowed per tool per window.
    #[serde(default)]
    pub max_calls: Option<u32>,
    /// `rate_limit`: the window in seconds.
    #[serde(default)]
    pub window_s: Option<u64>,
    /// `truncate_result`: the observation cap in characters.
    #[serde(default)]
    pub max_chars: Option<usize>,
    /// `approval`: how long to wait for a decision (default 120).
    #[serde(default)]
    pub approval_timeout_s: Option<u64>,
}

/// A hook kind with its own settings, checked.
#[derive(Clone, Debug, PartialEq)]
pub enum HookKind {
    ReadOnly,
    Approval { timeout: Duration },
    Audit,
    RateLimit { max_calls: u32, window: Duration },
    Truncate { max_chars: usize },
    Webhook { url: String },
}

/// A checked `[[hooks]]` entry: everything a hook is built from.
#[derive(Clone, Debug, PartialEq)]
pub struct HookPlan {
    pub kind: HookKind,
    /// The trimmed, non-empty `name`.
    pub name: Option<String>,
    /// A glob known to compile.
    pub tools: Option<String>,
    pub priority: i32,
    pub timeout: Duration,
    pub policy: FailurePolicy,
}

/// Checks every entry and resolves it. Errors name the entry (0-based, in file order) and the
/// field, e.g. `hooks[2].url: a webhook hook needs a url`.
pub fn plan_hooks(specs: &[HookSpec]) -> Result<Vec<HookPlan>, ConfigError> {
    specs
        .iter()
        .enumerate()
        .map(|(i, spec)| plan(i, spec))
        .collect()
}

fn plan(index: usize, spec: &HookSpec) -> Result<HookPlan, ConfigError> {
    field_values(index, spec)?;
    let kind = kind(index, spec)?;
    unused_fields(index, spec)?;
    let timeout = timeout(index, spec, &kind)?;
    Ok(HookPlan {
        kind,
        name: spec
            .name
            .as_deref()
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .map(str::to_string),
        tools: spec.tools.clone(),
        priority: spec.priority,
        timeout,
        policy: spec.policy,
    })
}

/// The entry's kind is known and each value it sets is usable on its own.
fn field_values(index: usize, h: &HookSpec) -> Result<(), ConfigError> {
    let key = |field: &str| format!("hooks[{index}].{field}");
    if !HOOK_KINDS.contains(&h.kind.as_str()) {
        return Err(ConfigError::invalid(
            key("kind"),
            format!(
                "unknown hook kind {:?} (expected one of {})",
                h.kind,
                HOOK_KINDS.join(", ")
            ),
        ));
    }
    if let Some(glob) = &h.tools {
        Glob::new(glob)
            .map_err(|e| ConfigError::invalid(key("tools"), format!("bad glob {glob:?}: {e}")))?;
    }
    if let Some(ms) = h.timeout_ms {
        at_least(&key("timeout_ms"), ms, 1)?;
    }
    match (h.kind.as_str(), &h.url) {
        ("webhook", None) => {
            return Err(ConfigError::invalid(
                key("url"),
                "a webhook hook needs a url",
            ))
        }
        // A URL with `${VAR}` is checked once expanded (config loading does it).
        ("webhook", Some(url)) if !url.contains("${") => http_url(&key("url"), url)?,
        _ => {}
    }
    if let Some(n) = h.max_calls {
        at_least(&key("max_calls"), n, 1)?;
    }
    if let Some(n) = h.window_s {
        at_least(&key("window_s"), n, 1)?;
    }
    if let Some(n) = h.max_chars {
        at_least(&key("max_chars"), n, 1)?;
    }
    if let Some(n) = h.approval_timeout_s {
        at_least(&key("approval_timeout_s"), n, 1)?;
    }
    Ok(())
}

/// The kind with its settings; the fields it needs are present (values already checked).
fn kind(index: usize, spec: &HookSpec) -> Result<HookKind, ConfigError> {
    let missing = |field: &str| {
        ConfigError::invalid(
            format!("hooks[{index}]"),
            format!("kind {:?} needs {field}", spec.kind),
        )
    };
    Ok(match spec.kind.as_str() {
        "read_only" => HookKind::ReadOnly,
        "audit" => HookKind::Audit,
        "approval" => HookKind::Approval {
            timeout: spec
                .approval_timeout_s
                .map_or(DEFAULT_APPROVAL_TIMEOUT, Duration::from_secs),
        },
        "rate_limit" => HookKind::RateLimit {
            max_calls: spec.max_calls.ok_or_else(|| missing("max_calls"))?,
            window: Duration::from_secs(spec.window_s.ok_or_else(|| missing("window_s"))?),
        },
        "truncate_result" => HookKind::Truncate {
            max_chars: spec.max_chars.ok_or_else(|| missing("max_chars"))?,
        },
        // Checked by `field_values`: a webhook has its url, and no other kind exists.
        _ => HookKind::Webhook {
            url: spec.url.clone().ok_or_else(|| missing("url"))?,
        },
    })
}

/// Which kind-specific fields each kind reads.
fn own_fields(kind: &str) -> &'static [&'static str] {
    match kind {
        "approval" => &["approval_timeout_s"],
        "rate_limit" => &["max_calls", "window_s"],
        "truncate_result" => &["max_chars"],
        "webhook" => &["url"],
        _ => &[],
    }
}

/// A kind-specific field set on a kind that ignores it is an error: usually a typo or a
/// misplaced line that would otherwise be silently ignored.
fn unused_fields(index: usize, spec: &HookSpec) -> Result<(), ConfigError> {
    let set = [
        ("url", spec.url.is_some()),
        ("max_calls", spec.max_calls.is_some()),
        ("window_s", spec.window_s.is_some()),
        ("max_chars", spec.max_chars.is_some()),
        ("approval_timeout_s", spec.approval_timeout_s.is_some()),
    ];
    let own = own_fields(&spec.kind);
    match set.iter().find(|(field, set)| *set && !own.contains(field)) {
        Some((field, _)) => Err(ConfigError::invalid(
            format!("hooks[{index}]"),
            format!("{field} does not apply to kind {:?}", spec.kind),
        )),
        None => Ok(()),
    }
}

/// The hook's timeout: `timeout_ms`, or the default — for an approval, its approval timeout
/// plus the margin, which an explicit `timeout_ms` must also exceed.
fn timeout(index: usize, spec: &HookSpec, kind: &HookKind) -> Result<Duration, ConfigError> {
    Ok(match (spec.timeout_ms, kind) {
        (Some(ms), HookKind::Approval { timeout }) if Duration::from_millis(ms) <= *timeout => {
            return Err(ConfigError::invalid(
                format!("hooks[{index}].timeout_ms"),
                "must be longer than approval_timeout_s, or the wait for a reviewer is cut short",
            ))
        }
        (Some(ms), _) => Duration::from_millis(ms),
        (None, HookKind::Approval { timeout }) => *timeout + APPROVAL_TIMEOUT_MARGIN,
        (None, _) => DEFAULT_HOOK_TIMEOUT,
    })
}
