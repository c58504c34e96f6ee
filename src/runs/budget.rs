//! Budgets per tenant (docs/configuration.md `[[budgets]]`, docs/api.md): which windows and limits
//! apply to a tenant, the admission of a new run (429 `too_many_active_runs`, and 429
//! `budget_exceeded` when its first call cannot fit), and what `GET /api/usage` reports of each
//! budget. The reservation before each call is the
//! run's [`Ledger`](super::ledger::Ledger); the SQL is `store/budget/`.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::budget_types::CallFloor;
use super::ledger::Ledger;
use super::manager::{RunError, RunManager};
use crate::config::{BudgetSpec, BudgetWindow};
use crate::llm::Llm;
use crate::store::{Conversation, WindowSpend};

/// A budget of `GET /api/usage`: the rule, its window's start and end, its spend, and whether
/// it refuses new runs now ([`RunManager::budget_status`]).
pub type BudgetStatus = (BudgetSpec, DateTime<Utc>, DateTime<Utc>, WindowSpend, bool);

impl RunManager {
    /// A new ledger for a run of `owner`'s conversation `conv`.
    pub(super) fn ledger_for(&self, owner: &str, run_id: Uuid, conv: &Conversation) -> Arc<Ledger> {
        let agent = conv
            .agent
            .as_deref()
            .unwrap_or(crate::config::IMPLICIT_AGENT);
        Ledger::new(
            self.store.clone(),
            self.budgets.clone(),
            owner,
            run_id,
            agent,
        )
    }

    /// Whether `owner` may start a run now: under `max_active_runs_per_tenant` (runs going on
    /// every instance). Every API's run start calls it, then [`Self::admit_call`] once the
    /// run's model is known.
    pub async fn admit(&self, owner: &str) -> Result<(), RunError> {
        if let Some(max) = self.budgets.max_active_runs_per_tenant {
            let going = self.store.running_runs_of(owner).await?;
            if going >= u64::from(max) {
                return Err(RunError::TooManyActiveRuns(max));
            }
        }
        Ok(())
    }

    /// The least the first call of a run on `model` (a registry name, served by `llm`) with a
    /// prompt of `prompt` estimated tokens reserves.
    pub(super) fn call_floor(&self, model: &str, llm: &dyn Llm, prompt: u64) -> CallFloor {
        let out = u64::from(llm.max_output_tokens());
        CallFloor {
            tokens: prompt.saturating_add(out),
            cost: self
                .budgets
                .prices
                .get(model)
                .map(|p| p.worst_case(prompt, out)),
        }
    }

    /// Whether every budget of `owner` can take a call reserving `call` (a new run's first): a
    /// run that could make no call is refused 429 `budget_exceeded` before anything is stored,
    /// `Retry-After` the end of the latest window that refuses it.
    pub(super) async fn admit_call(&self, owner: &str, call: CallFloor) -> Result<(), RunError> {
        let b = &self.budgets;
        if b.is_empty() {
            return Ok(());
        }
        let now = b.now();
        let applied = b.applied(owner, now);
        let keys: Vec<(&str, i64)> = applied
            .iter()
            .map(|a| (a.rule.window.as_str(), a.starts_at.timestamp_micros()))
            .collect();
        let spend = self.store.budget_spend(owner, &keys).await?;
        // The longest wait among the refusing windows: each must end before the call fits.
        let mut wait: Option<(u64, &str)> = None;
        for (a, s) in applied.iter().zip(&spend) {
            if a.refuses(s, call) {
                let secs = (a.ends_at - now).num_seconds().max(1).unsigned_abs();
                if wait.is_none_or(|(w, _)| secs > w) {
                    wait = Some((secs, a.rule.window.as_str()));
                }
            }
        }
        match wait {
            Some((retry_after, window)) => Err(RunError::BudgetExceeded {
                message: format!(
                    "the {window} budget of this tenant cannot take the run's first call \
                     (it reserves up to {} tokens: the prompt and the model's max_output_tokens)",
                    call.tokens
                ),
                retry_after,
            }),
            None => Ok(()),
        }
    }

    /// `owner`'s budgets now with their window's spend (`GET /api/usage`), each saying whether
    /// it refuses a new run of the default model (whose first call reserves at least its
    /// `max_output_tokens`).
    pub async fn budget_status(&self, owner: &str) -> Result<Vec<BudgetStatus>, RunError> {
        let b = &self.budgets;
        let floor = match self.models.resolve(None) {
            Some((info, llm)) => self.call_floor(&info.name, llm.as_ref(), 0),
            None => CallFloor {
                tokens: 1,
                cost: None,
            },
        };
        let applied = b.applied(owner, b.now());
        let keys: Vec<(&str, i64)> = applied
            .iter()
            .map(|a| (a.rule.window.as_str(), a.starts_at.timestamp_micros()))
            .collect();
        let spend = self.store.budget_spend(owner, &keys).await?;
        Ok(applied
            .into_iter()
            .zip(spend)
            .map(|(a, s)| {
                let refuses = a.refuses(&s, floor);
                (a.rule.clone(), a.starts_at, a.ends_at, s, refuses)
            })
            .collect())
    }

    /// Tenants past a warning threshold in their current windows (a gauge of `/metrics`).
    pub async fn tenants_over_warning(&self) -> Result<u64, RunError> {
        if self.budgets.is_empty() {
            return Ok(0);
        }
        let now = self.budgets.now();
        let starts: Vec<(&str, i64)> = [BudgetWindow::Day, BudgetWindow::Week, BudgetWindow::Month]
            .into_iter()
            .map(|w| (w.as_str(), w.start(now).timestamp_micros()))
            .collect();
        Ok(self.store.tenants_warned(&starts).await?)
    }
}
