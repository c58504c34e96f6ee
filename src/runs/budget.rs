//! Budgets per tenant (docs/configuration.md `[[budgets]]`, docs/api.md): which windows and limits
//! apply to a tenant, the admission of a new run (429 `budget_exceeded`, `too_many_active_runs`),
//! and what `GET /api/usage` reports of each budget. The reservation before each call is the
//! run's [`Ledger`](super::ledger::Ledger); the SQL is `store/budget/`.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::ledger::Ledger;
use super::manager::{RunError, RunManager};
use crate::config::{BudgetSpec, BudgetWindow};
use crate::store::{Conversation, WindowSpend};

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
    /// every instance) and under every budget. Every API's run start calls it.
    pub async fn admit(&self, owner: &str) -> Result<(), RunError> {
        let b = &self.budgets;
        if let Some(max) = b.max_active_runs_per_tenant {
            let going = self.store.running_runs_of(owner).await?;
            if going >= u64::from(max) {
                return Err(RunError::TooManyActiveRuns(max));
            }
        }
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
        // The longest wait among the exhausted windows: each must end before a run fits.
        let mut wait: Option<(u64, &str)> = None;
        for (a, s) in applied.iter().zip(&spend) {
            if a.exhausted(s) {
                let secs = (a.ends_at - now).num_seconds().max(1).unsigned_abs();
                if wait.is_none_or(|(w, _)| secs > w) {
                    wait = Some((secs, a.rule.window.as_str()));
                }
            }
        }
        match wait {
            Some((retry_after, window)) => Err(RunError::BudgetExceeded {
                message: format!("the {window} budget of this tenant is used up"),
                retry_after,
            }),
            None => Ok(()),
        }
    }

    /// `owner`'s budgets now with their window's spend (`GET /api/usage`).
    pub async fn budget_status(
        &self,
        owner: &str,
    ) -> Result<Vec<(BudgetSpec, DateTime<Utc>, DateTime<Utc>, WindowSpend)>, RunError> {
        let b = &self.budgets;
        let applied = b.applied(owner, b.now());
        let keys: Vec<(&str, i64)> = applied
            .iter()
            .map(|a| (a.rule.window.as_str(), a.starts_at.timestamp_micros()))
            .collect();
        let spend = self.store.budget_spend(owner, &keys).await?;
        Ok(applied
            .into_iter()
            .zip(spend)
            .map(|(a, s)| (a.rule.clone(), a.starts_at, a.ends_at, s))
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
