//! The admission of a new run (docs/api.md): under the per-tenant run cap (429
//! `too_many_active_runs`), and its first call fitting every budget that applies (429
//! `budget_exceeded`); and what `GET /api/usage` and `/metrics` report of the budgets. The
//! reservation before each call is the run's [`Ledger`](super::ledger::Ledger); the SQL is
//! `store/budget/`.

use chrono::{DateTime, Utc};

use super::rules::{Budgets, CallFloor};
use crate::config::{BudgetSpec, BudgetWindow};
use crate::llm::Llm;
use crate::store::{Store, StoreError, WindowSpend};

/// A budget of `GET /api/usage`: the rule, its window's start and end, its spend, and whether
/// it refuses new runs now.
pub type BudgetStatus = (BudgetSpec, DateTime<Utc>, DateTime<Utc>, WindowSpend, bool);

/// Why a new run is refused.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    /// `[server] max_active_runs_per_tenant` runs are going already.
    #[error("this tenant already has {0} active runs, the most allowed")]
    TooManyActiveRuns(u32),
    /// A budget cannot take the run's first call: retry after `retry_after` seconds.
    #[error("{message}")]
    BudgetExceeded { message: String, retry_after: u64 },
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl Budgets {
    /// Whether `owner` may start a run now: under `max_active_runs_per_tenant` (runs going on
    /// every instance).
    pub async fn admit_run(&self, store: &Store, owner: &str) -> Result<(), Refusal> {
        if let Some(max) = self.max_active_runs_per_tenant {
            let going = store.running_runs_of(owner).await?;
            if going >= u64::from(max) {
                return Err(Refusal::TooManyActiveRuns(max));
            }
        }
        Ok(())
    }

    /// The least the first call of a run on `model` (a registry name, served by `llm`) with a
    /// prompt of `prompt` estimated tokens reserves.
    pub fn call_floor(&self, model: &str, llm: &dyn Llm, prompt: u64) -> CallFloor {
        let out = u64::from(llm.max_output_tokens());
        CallFloor {
            tokens: prompt.saturating_add(out),
            cost: self.prices.get(model).map(|p| p.worst_case(prompt, out)),
        }
    }

    /// Whether every budget of `owner` can take a call reserving `call` (a new run's first): a
    /// run that could make no call is refused before anything is stored, `retry_after` the end
    /// of the latest window that refuses it.
    pub async fn admit_call(
        &self,
        store: &Store,
        owner: &str,
        call: CallFloor,
    ) -> Result<(), Refusal> {
        if self.is_empty() {
            return Ok(());
        }
        let now = self.now();
        let applied = self.applied(owner, now);
        let keys: Vec<(&str, i64)> = applied
            .iter()
            .map(|a| (a.rule.window.as_str(), a.starts_at.timestamp_micros()))
            .collect();
        let spend = store.budget_spend(owner, &keys).await?;
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
            Some((retry_after, window)) => Err(Refusal::BudgetExceeded {
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

    /// `owner`'s budgets now with their window's spend, each saying whether it refuses a run
    /// whose first call reserves `floor`.
    pub async fn status(
        &self,
        store: &Store,
        owner: &str,
        floor: CallFloor,
    ) -> Result<Vec<BudgetStatus>, StoreError> {
        let applied = self.applied(owner, self.now());
        let keys: Vec<(&str, i64)> = applied
            .iter()
            .map(|a| (a.rule.window.as_str(), a.starts_at.timestamp_micros()))
            .collect();
        let spend = store.budget_spend(owner, &keys).await?;
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
    pub async fn tenants_over_warning(&self, store: &Store) -> Result<u64, StoreError> {
        if self.is_empty() {
            return Ok(0);
        }
        let now = self.now();
        let starts: Vec<(&str, i64)> = [BudgetWindow::Day, BudgetWindow::Week, BudgetWindow::Month]
            .into_iter()
            .map(|w| (w.as_str(), w.start(now).timestamp_micros()))
            .collect();
        store.tenants_warned(&starts).await
    }
}
