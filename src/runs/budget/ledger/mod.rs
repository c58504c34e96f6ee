//! [`Ledger`]: the one place every LLM call of a run passes through (the loop, synthesis, tool
//! selection, structured calls, the router, the DAG planner and steps, compaction: the run's
//! models are all wrapped in `Budgeted`). Before a call it reserves the call's worst case
//! (estimated prompt tokens plus the most output tokens, priced) in the tenant's budget windows
//! (a write checked against the windows' totals, in a transaction shared with other runs'
//! calls); after it, prices the usage (`usage.cost_usd`), gives the reservation back, adds the
//! spend and records the call for `GET /api/usage`. A call the budget cannot take is not made:
//! it fails with [`LlmError::BudgetExceeded`], which ends the run gracefully, and the run's
//! status says `budget_exceeded`.
//!
//! One booking per call: a finished call that reserved waits in `pending`, and its settlement
//! goes with the run's next reservation, or with the run's end (in the transaction that stores
//! its `done`: [`Ledger::closing`]), or on its own [`SETTLE_AFTER`] later, whichever comes
//! first; and the store writes the bookings of every run made meanwhile in one transaction (a
//! group commit, `store/budget/batch.rs`). Until then its hold stays reserved in full (the window counts more,
//! never less, than was spent), and a process that dies meanwhile loses that call's spend as it
//! loses a call in flight: recovery releases the hold.

mod budgeted;
mod estimate;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use uuid::Uuid;

use super::rules::Budgets;
use crate::domain::Cost;
use crate::llm::registry::ModelRegistry;
use crate::llm::{Llm, LlmError, Usage};
use crate::store::{Booked, CallUsage, Hold, Reservation, Settlement, Store, WindowSpend};

/// The longest a finished call's settlement waits for the run's next reservation.
pub const SETTLE_AFTER: Duration = Duration::from_secs(1);

/// The budget and usage accounting of one run.
pub struct Ledger {
    store: Store,
    budgets: Arc<Budgets>,
    tenant: String,
    run_id: Uuid,
    agent: String,
    /// A call was refused: the run ends `budget_exceeded`.
    refused: AtomicBool,
    /// Finished calls that reserved, not settled yet.
    pending: Mutex<Vec<Settlement>>,
    /// A task will settle `pending` [`SETTLE_AFTER`] from its arming.
    timer_armed: AtomicBool,
}

impl Ledger {
    pub fn new(
        store: Store,
        budgets: Arc<Budgets>,
        tenant: &str,
        run_id: Uuid,
        agent: &str,
    ) -> Arc<Self> {
        Arc::new(Self {
            store,
            budgets,
            tenant: tenant.to_string(),
            run_id,
            agent: agent.to_string(),
            refused: AtomicBool::new(false),
            pending: Mutex::new(Vec::new()),
            timer_armed: AtomicBool::new(false),
        })
    }

    /// Whether the budget refused one of the run's calls.
    pub fn refused(&self) -> bool {
        self.refused.load(Ordering::Relaxed)
    }

    /// Whether the tenant has budgets to reserve in.
    pub fn budgeted(&self) -> bool {
        !self.budgets.is_empty()
    }

    /// `model` (a registry name) wrapped so its calls go through this ledger.
    pub fn wrap(self: &Arc<Self>, name: &str, inner: Arc<dyn Llm>) -> Arc<dyn Llm> {
        budgeted::wrap(self, name, inner, self.budgets.prices.get(name).copied())
    }

    /// Every model of `models` wrapped (the DAG's steps may use any of them).
    pub fn wrap_registry(self: &Arc<Self>, models: &ModelRegistry) -> ModelRegistry {
        let entries = models
            .infos()
            .into_iter()
            .filter_map(|info| {
                let llm = models.get(&info.name)?;
                let wrapped = self.wrap(&info.name, llm);
                Some((info, wrapped))
            })
            .collect();
        ModelRegistry::from_llms(entries, models.default_name()).unwrap_or_else(|_| models.clone())
    }

    /// The run ended: its pending calls are settled and what its calls cut short (cancelled,
    /// their stream dropped) still hold is released, in one transaction.
    pub async fn finish(&self) {
        if let Some(pending) = self.closing() {
            self.finish_with(pending).await;
        }
    }

    /// The run ends: its pending calls, to settle with its end in the transaction that stores
    /// its `done` (which also releases what its calls cut short still hold); `None` without
    /// budgets.
    pub fn closing(&self) -> Option<Vec<Settlement>> {
        self.budgeted().then(|| self.take_pending())
    }

    /// [`Ledger::finish`] with the settlements [`Ledger::closing`] took, when the run's end
    /// was not stored with them.
    pub async fn finish_with(&self, pending: Vec<Settlement>) {
        match self.store.book(&pending, None, Some(self.run_id)).await {
            Ok(b) => self.warn_past_thresholds(&b.totals).await,
            Err(e) => {
                tracing::warn!(run_id = %self.run_id, error = %e, "cannot settle the run's budget reservations");
            }
        }
    }

    /// Reserves `tokens` and `cost` in every budget window of the tenant, settling the run's
    /// pending calls in the same transaction; `None` with no budget. A call of an unpriced
    /// model is held to the token limits only.
    async fn reserve(
        self: &Arc<Self>,
        tokens: u64,
        cost: Option<Cost>,
    ) -> Result<Option<Hold>, LlmError> {
        let applied = self.budgets.applied(&self.tenant, self.budgets.now());
        if applied.is_empty() {
            return Ok(None);
        }
        let mut limits: Vec<_> = applied.iter().map(|a| a.limit()).collect();
        if cost.is_none() {
            for l in &mut limits {
                l.nanos = None;
            }
        }
        let r = Reservation {
            tenant: &self.tenant,
            run_id: self.run_id,
            windows: &limits,
            tokens: i64::try_from(tokens).unwrap_or(i64::MAX),
            nanos: i64::try_from(cost.unwrap_or(Cost::ZERO).nanos()).unwrap_or(i64::MAX),
        };
        let pending = self.take_pending();
        let booked = match self.store.book(&pending, Some(r), None).await {
            Ok(b) => b,
            // Fail closed: a budget that cannot be checked does not admit a call. Nothing
            // was written: the settlements wait for the next try.
            Err(e) => {
                self.defer(pending);
                return Err(LlmError::Connect(format!(
                    "the budget cannot be checked: {e}"
                )));
            }
        };
        self.warn_past_thresholds(&booked.totals).await;
        if booked.hold.is_none() {
            self.refused.store(true, Ordering::Relaxed);
            let windows: Vec<&str> = applied.iter().map(|a| a.rule.window.as_str()).collect();
            return Err(LlmError::BudgetExceeded(format!(
                "the next call (up to {tokens} tokens) does not fit the {} budget",
                windows.join("/")
            )));
        }
        Ok(booked.hold)
    }

    /// A call ended: one that reserved waits for the run's next write; one that did not (no
    /// budget) is recorded now.
    async fn settle(self: &Arc<Self>, hold: Option<Hold>, model: &str, usage: Usage) {
        if let Some(s) = self.ended(hold, model, usage) {
            self.settle_now(vec![s]).await;
        }
    }

    /// A call ended: one that reserved joins `pending` (nothing to await); one that did not is
    /// handed back, to be recorded now.
    fn ended(
        self: &Arc<Self>,
        hold: Option<Hold>,
        model: &str,
        usage: Usage,
    ) -> Option<Settlement> {
        let s = Settlement {
            hold,
            usage: self.call_usage(model, usage),
            at: chrono::Utc::now().timestamp_micros(),
        };
        if s.hold.is_none() {
            return Some(s);
        }
        self.defer(vec![s]);
        None
    }

    async fn settle_now(&self, batch: Vec<Settlement>) {
        match self.store.book(&batch, None, None).await {
            Ok(Booked { totals, .. }) => self.warn_past_thresholds(&totals).await,
            Err(e) => {
                tracing::warn!(error = %e, tenant = %self.tenant, "could not record a call's usage");
            }
        }
    }

    fn take_pending(&self) -> Vec<Settlement> {
        std::mem::take(&mut *self.pending.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Queues settlements and makes sure a timer will write them if no reservation does.
    fn defer(self: &Arc<Self>, batch: Vec<Settlement>) {
        if batch.is_empty() {
            return;
        }
        self.pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(batch);
        if self.timer_armed.swap(true, Ordering::SeqCst) {
            return;
        }
        let me = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(SETTLE_AFTER).await;
            // Disarmed before taking: a call deferred after the take arms a new timer.
            me.timer_armed.store(false, Ordering::SeqCst);
            let pending = me.take_pending();
            if !pending.is_empty() {
                me.settle_now(pending).await;
            }
        });
    }

    fn call_usage(&self, model: &str, usage: Usage) -> CallUsage {
        CallUsage {
            tenant: self.tenant.clone(),
            run_id: self.run_id,
            model: model.to_string(),
            agent: self.agent.clone(),
            prompt_tokens: i64::try_from(usage.prompt_tokens).unwrap_or(i64::MAX),
            completion_tokens: i64::try_from(usage.completion_tokens).unwrap_or(i64::MAX),
            cache_read_tokens: i64::try_from(usage.cache_read_tokens).unwrap_or(i64::MAX),
            cache_write_tokens: i64::try_from(usage.cache_write_tokens).unwrap_or(i64::MAX),
            cost_nanos: i64::try_from(usage.cost_usd.nanos()).unwrap_or(i64::MAX),
            unpriced: usage.unpriced_calls > 0,
            estimated: usage.estimated_calls > 0,
        }
    }

    /// Logs the warning threshold once per window (whoever marks the window warned).
    async fn warn_past_thresholds(&self, totals: &[WindowSpend]) {
        let applied = self.budgets.applied(&self.tenant, self.budgets.now());
        for s in totals.iter().filter(|s| s.warned == 0) {
            let rule = applied.iter().find(|a| {
                a.rule.window.as_str() == s.window_kind
                    && a.starts_at.timestamp_micros() == s.starts_at
            });
            let Some(a) = rule else { continue };
            if !a.past_warning(s) {
                continue;
            }
            if let Ok(true) = self
                .store
                .mark_budget_warned(&self.tenant, &s.window_kind, s.starts_at)
                .await
            {
                tracing::warn!(
                    tenant = %self.tenant,
                    window = %s.window_kind,
                    spent_tokens = s.spent_tokens,
                    spent_usd = Cost::from_nanos(s.spent_nanos.max(0).unsigned_abs()).usd(),
                    warn_at_percent = a.rule.warn_at_percent,
                    "a tenant passed its budget's warning threshold"
                );
            }
        }
    }
}
