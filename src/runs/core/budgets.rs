//! The run core's side of budgets (the rules and admission are `runs/budget/`): each run's
//! [`Ledger`], and the admission every API's run start asks for, with the refusal as a
//! [`RunError`].

use std::sync::Arc;

use uuid::Uuid;

use super::manager::{RunError, RunManager};
use crate::llm::Llm;
use crate::runs::budget::ledger::Ledger;
use crate::runs::budget::{BudgetStatus, CallFloor};
use crate::store::Conversation;

impl RunManager {
    /// A new ledger for a run of `owner`'s conversation `conv`.
    pub(in crate::runs) fn ledger_for(
        &self,
        owner: &str,
        run_id: Uuid,
        conv: &Conversation,
    ) -> Arc<Ledger> {
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
        Ok(self.budgets.admit_run(&self.store, owner).await?)
    }

    /// The least the first call of a run on `model` (served by `llm`) with a prompt of
    /// `prompt` estimated tokens reserves.
    pub(in crate::runs) fn call_floor(&self, model: &str, llm: &dyn Llm, prompt: u64) -> CallFloor {
        self.budgets.call_floor(model, llm, prompt)
    }

    /// Whether every budget of `owner` can take a call reserving `call` (a new run's first): a
    /// run that could make no call is refused 429 `budget_exceeded` before anything is stored.
    pub(in crate::runs) async fn admit_call(
        &self,
        owner: &str,
        call: CallFloor,
    ) -> Result<(), RunError> {
        Ok(self.budgets.admit_call(&self.store, owner, call).await?)
    }

    /// `owner`'s budgets now with their window's spend (`GET /api/usage`), each saying whether
    /// it refuses a new run of the default model (whose first call reserves at least its
    /// `max_output_tokens`).
    pub async fn budget_status(&self, owner: &str) -> Result<Vec<BudgetStatus>, RunError> {
        let floor = match self.models.resolve(None) {
            Some((info, llm)) => self.call_floor(&info.name, llm.as_ref(), 0),
            None => CallFloor {
                tokens: 1,
                cost: None,
            },
        };
        Ok(self.budgets.status(&self.store, owner, floor).await?)
    }

    /// Tenants past a warning threshold in their current windows (a gauge of `/metrics`).
    pub async fn tenants_over_warning(&self) -> Result<u64, RunError> {
        Ok(self.budgets.tenants_over_warning(&self.store).await?)
    }
}
