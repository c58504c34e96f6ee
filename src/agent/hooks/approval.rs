//! Human approval (docs/api.md). A tool configured with `requires_approval` makes the
//! [`ApprovalHook`] register a pending request with the shared [`ApprovalBroker`], announce it as
//! `step {type:"approval_required"}` and wait — a plain `.await` on a oneshot, so other runs keep
//! going — until `POST /api/approvals/{id}` calls [`ApprovalBroker::decide`] or the timeout
//! expires. The waiting side holds a [`PendingApproval`] guard: if the run is cancelled and the
//! future dropped, the guard removes the request so the broker never accumulates orphans.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use dashmap::DashMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::oneshot;
use uuid::Uuid;

use super::{Hook, HookContext, HookError, PreVerdict};
use crate::agent::events::{AgentEvent, StepEvent};

/// How long a run waits for a reviewer when the configuration does not say (docs/api.md).
pub use crate::config::hooks::DEFAULT_APPROVAL_TIMEOUT;

/// What a reviewer (and the server's tenancy check) needs to know about a pending request.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ApprovalInfo {
    pub run_id: String,
    pub conversation_id: String,
    pub tool: String,
    pub arguments: Value,
    pub requested_at: DateTime<Utc>,
}

/// A reviewer's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    pub approve: bool,
    pub reason: Option<String>,
}

/// How a wait ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ApprovalOutcome {
    Approved,
    Rejected(Option<String>),
    TimedOut,
}

#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum ApprovalError {
    /// Unknown id, already decided, timed out, or its run is gone. The server answers 404.
    #[error("approval not found or no longer pending")]
    NotFound,
}

struct Pending {
    info: ApprovalInfo,
    tx: oneshot::Sender<Decision>,
}

/// Where requests are also recorded when other instances must see and decide them (docs/deployment.md):
/// the database's approval rows, whose single `UPDATE` decides each request once.
#[async_trait]
pub trait ApprovalLedger: Send + Sync {
    /// Records a pending request, before its event goes out.
    async fn requested(&self, id: Uuid, info: &ApprovalInfo);
    /// The wait timed out here: decides the request as timed out unless a reviewer (on any
    /// instance) decided first, whose decision is then returned and stands.
    async fn timed_out(&self, id: Uuid) -> Option<Decision>;
}

/// Pending approvals of every run, shared by the hooks and the HTTP handlers. Cheap to clone:
/// clones share the same table.
#[derive(Clone, Default)]
pub struct ApprovalBroker {
    pending: Arc<DashMap<Uuid, Pending>>,
    ledger: Arc<std::sync::OnceLock<Arc<dyn ApprovalLedger>>>,
}

impl ApprovalBroker {
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a request. The caller awaits the returned guard; dropping it withdraws the
    /// request.
    pub fn request(&self, info: ApprovalInfo) -> PendingApproval {
        let id = Uuid::new_v4();
        let (tx, rx) = oneshot::channel();
        self.pending.insert(id, Pending { info, tx });
        PendingApproval {
            id,
            rx,
            pending: Arc::clone(&self.pending),
        }
    }

    /// Delivers a reviewer's decision. Each request is decided at most once: the second call
    /// (or one after a timeout or cancellation) gets [`ApprovalError::NotFound`].
    pub fn decide(
        &self,
        id: Uuid,
        approve: bool,
        reason: Option<String>,
    ) -> Result<(), ApprovalError> {
        let (_, pending) = self.pending.remove(&id).ok_or(ApprovalError::NotFound)?;
        pending
            .tx
            .send(Decision { approve, reason })
            .map_err(|_| ApprovalError::NotFound)
    }

    /// The request's metadata, so the server can check it belongs to the caller's tenant
    /// before deciding.
    pub fn get(&self, id: Uuid) -> Option<ApprovalInfo> {
        self.pending.get(&id).map(|p| p.info.clone())
    }

    /// Every pending request (for listings and operations pages).
    pub fn list(&self) -> Vec<(Uuid, ApprovalInfo)> {
        self.pending
            .iter()
            .map(|e| (*e.key(), e.value().info.clone()))
            .collect()
    }

    pub fn pending_count(&self) -> usize {
        self.pending.len()
    }

    /// Records every request in `ledger` from now on (set once; later calls are ignored).
    pub fn set_ledger(&self, ledger: Arc<dyn ApprovalLedger>) {
        let _ = self.ledger.set(ledger);
    }

    pub fn has_ledger(&self) -> bool {
        self.ledger.get().is_some()
    }

    async fn record(&self, id: Uuid, info: &ApprovalInfo) {
        if let Some(ledger) = self.ledger.get() {
            ledger.requested(id, info).await;
        }
    }

    /// A local timeout, unless the ledger holds a reviewer's decision that came first.
    async fn settle_timeout(&self, id: Uuid) -> ApprovalOutcome {
        let decided = match self.ledger.get() {
            Some(ledger) => ledger.timed_out(id).await,
            None => None,
        };
        match decided {
            Some(Decision { approve: true, .. }) => ApprovalOutcome::Approved,
            Some(Decision { reason, .. }) => ApprovalOutcome::Rejected(reason),
            None => ApprovalOutcome::TimedOut,
        }
    }
}

/// The waiting side of one request. Dropping it (run cancelled) removes the request.
pub struct PendingApproval {
    id: Uuid,
    rx: oneshot::Receiver<Decision>,
    pending: Arc<DashMap<Uuid, Pending>>,
}

impl PendingApproval {
    pub fn id(&self) -> Uuid {
        self.id
    }

    /// Waits for the decision or the timeout; either way the request is gone afterwards.
    pub async fn wait(mut self, timeout: Duration) -> ApprovalOutcome {
        match tokio::time::timeout(timeout, &mut self.rx).await {
            Ok(Ok(Decision { approve: true, .. })) => ApprovalOutcome::Approved,
            Ok(Ok(Decision { reason, .. })) => ApprovalOutcome::Rejected(reason),
            // The sender lives in the table until decided, so this only happens if the entry
            // was removed without a decision: treat it like an unanswered request.
            Ok(Err(_)) | Err(_) => ApprovalOutcome::TimedOut,
        }
    }
}

impl Drop for PendingApproval {
    fn drop(&mut self) {
        self.pending.remove(&self.id);
    }
}

/// The `approval` hook: pauses calls to tools marked `requires_approval`; others pass through.
pub struct ApprovalHook {
    broker: Arc<ApprovalBroker>,
    timeout: Duration,
}

impl ApprovalHook {
    pub fn new(broker: Arc<ApprovalBroker>, timeout: Duration) -> Self {
        Self { broker, timeout }
    }

    pub fn timeout(&self) -> Duration {
        self.timeout
    }
}

/// "120 s" for whole seconds, "150 ms" otherwise, so short test timeouts still read sensibly.
fn human_duration(d: Duration) -> String {
    if d.subsec_millis() == 0 && d.as_secs() > 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{} ms", d.as_millis())
    }
}

#[async_trait]
impl Hook for ApprovalHook {
    fn name(&self) -> &str {
        "approval"
    }

    async fn pre_tool_use(&self, ctx: &HookContext) -> Result<PreVerdict, HookError> {
        if !ctx.requires_approval {
            return Ok(PreVerdict::Allow);
        }
        let info = ApprovalInfo {
            run_id: ctx.run_id.clone(),
            conversation_id: ctx.conversation_id.clone(),
            tool: ctx.tool.clone(),
            arguments: ctx.arguments.clone(),
            requested_at: Utc::now(),
        };
        let pending = self.broker.request(info.clone());
        let id = pending.id();
        // Listed everywhere before anyone can learn the id from the event.
        self.broker.record(id, &info).await;
        let event = AgentEvent::Step(StepEvent::ApprovalRequired {
            iteration: ctx.iteration,
            approval_id: pending.id().to_string(),
            tool: ctx.tool.clone(),
            arguments: ctx.arguments.clone(),
            dag_step: None,
        });
        match &ctx.events {
            Some(sink) => sink.send(event),
            // Nobody can learn the id from the event stream; the request is still listed by
            // the broker, so wait anyway rather than silently allowing the call.
            None => {
                tracing::warn!(run_id = %ctx.run_id, tool = %ctx.tool, "approval_required event could not be emitted")
            }
        }
        tracing::info!(run_id = %ctx.run_id, tool = %ctx.tool, approval_id = %pending.id(), "waiting for approval");
        let outcome = match pending.wait(self.timeout).await {
            ApprovalOutcome::TimedOut => self.broker.settle_timeout(id).await,
            decided => decided,
        };
        Ok(match outcome {
            ApprovalOutcome::Approved => PreVerdict::Allow,
            ApprovalOutcome::Rejected(Some(reason)) if !reason.trim().is_empty() => {
                PreVerdict::Block(format!("rejected by a reviewer: {}", reason.trim()))
            }
            ApprovalOutcome::Rejected(_) => PreVerdict::Block("rejected by a reviewer".into()),
            ApprovalOutcome::TimedOut => PreVerdict::Block(format!(
                "approval timed out after {}",
                human_duration(self.timeout)
            )),
        })
    }
}

#[cfg(test)]
mod tests;
