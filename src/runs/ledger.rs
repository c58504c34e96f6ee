//! [`Ledger`]: the one place every LLM call of a run passes through (the loop, synthesis, tool
//! selection, structured calls, the router, the DAG planner and steps, compaction: the run's
//! models are all wrapped in [`Budgeted`]). Before a call it reserves the call's worst case
//! (estimated prompt tokens plus the most output tokens, priced) in the tenant's budget windows
//! with one conditional write; after it, prices the usage (`usage.cost_usd`), gives the
//! reservation back, adds the spend and records the call for `GET /api/usage`. A call the
//! budget cannot take is not made: it fails with [`LlmError::BudgetExceeded`], which ends the
//! run gracefully, and the run's status says `budget_exceeded`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use futures::StreamExt;
use uuid::Uuid;

use super::budget_types::Budgets;
use crate::agent::context::estimate_tokens;
use crate::domain::{Cost, Price};
use crate::llm::price::priced;
use crate::llm::registry::ModelRegistry;
use crate::llm::{
    Abilities, ChatRequest, ChatResponse, ChatStream, Llm, LlmError, StreamEvent, Usage,
};
use crate::store::{CallUsage, Hold, Store};

/// The budget and usage accounting of one run.
pub struct Ledger {
    store: Store,
    budgets: Arc<Budgets>,
    tenant: String,
    run_id: Uuid,
    agent: String,
    /// A call was refused: the run ends `budget_exceeded`.
    refused: AtomicBool,
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
        Arc::new(Budgeted {
            inner,
            name: name.to_string(),
            price: self.budgets.prices.get(name).copied(),
            ledger: self.clone(),
        })
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

    /// Reserves `tokens` and `cost` in every budget window of the tenant; `None` with no
    /// budget. A call of an unpriced model is held to the token limits only.
    async fn reserve(&self, tokens: u64, cost: Option<Cost>) -> Result<Option<Hold>, LlmError> {
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
        let (t, n) = (
            i64::try_from(tokens).unwrap_or(i64::MAX),
            i64::try_from(cost.unwrap_or(Cost::ZERO).nanos()).unwrap_or(i64::MAX),
        );
        match self
            .store
            .reserve_budget(&self.tenant, self.run_id, &limits, t, n)
            .await
        {
            Ok(Some(hold)) => Ok(Some(hold)),
            Ok(None) => {
                self.refused.store(true, Ordering::Relaxed);
                let windows: Vec<&str> = applied.iter().map(|a| a.rule.window.as_str()).collect();
                Err(LlmError::BudgetExceeded(format!(
                    "the next call (up to {tokens} tokens) does not fit the {} budget",
                    windows.join("/")
                )))
            }
            // Fail closed: a budget that cannot be checked does not admit a call.
            Err(e) => Err(LlmError::Connect(format!(
                "the budget cannot be checked: {e}"
            ))),
        }
    }

    /// Settles a call: the hold back, the spend added, the call recorded; the warning
    /// threshold logged once per window.
    async fn settle(&self, hold: Option<Hold>, model: &str, usage: Usage) {
        let call = CallUsage {
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
        };
        let totals = match self.store.settle_budget(hold.as_ref(), &call).await {
            Ok(t) => t,
            Err(e) => {
                tracing::warn!(error = %e, tenant = %self.tenant, "could not record a call's usage");
                return;
            }
        };
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

/// A model whose calls go through a run's [`Ledger`].
struct Budgeted {
    inner: Arc<dyn Llm>,
    /// The registry name (prices and usage are by it).
    name: String,
    price: Option<Price>,
    ledger: Arc<Ledger>,
}

impl Budgeted {
    /// The call's worst case: its estimated prompt and the most it may write.
    fn worst_case(&self, request: &ChatRequest) -> (u64, Option<Cost>) {
        let prompt = estimate_tokens(&request.messages, &request.tools) as u64;
        let out = u64::from(
            request
                .max_tokens
                .unwrap_or_else(|| self.inner.max_output_tokens()),
        );
        let cost = self.price.map(|p| p.worst_case(prompt, out));
        (prompt.saturating_add(out), cost)
    }
}

#[async_trait]
impl Llm for Budgeted {
    crate::llm::forward_llm_description!(inner);

    async fn chat(&self, request: ChatRequest) -> Result<ChatResponse, LlmError> {
        let (tokens, cost) = self.worst_case(&request);
        let hold = self.ledger.reserve(tokens, cost).await?;
        match self.inner.chat(request).await {
            Ok(mut r) => {
                r.usage = priced(r.usage, self.price.as_ref());
                self.ledger.settle(hold, &self.name, r.usage).await;
                Ok(r)
            }
            Err(e) => {
                // What a failed call used is unknown: its reservation is given back.
                let none = Usage {
                    llm_calls: 1,
                    ..Usage::default()
                };
                self.ledger
                    .settle(hold, &self.name, priced(none, self.price.as_ref()))
                    .await;
                Err(e)
            }
        }
    }

    async fn stream_chat(&self, request: ChatRequest) -> Result<ChatStream, LlmError> {
        let (tokens, cost) = self.worst_case(&request);
        let hold = self.ledger.reserve(tokens, cost).await?;
        let stream = match self.inner.stream_chat(request).await {
            Ok(s) => s,
            Err(e) => {
                let none = Usage {
                    llm_calls: 1,
                    ..Usage::default()
                };
                self.ledger
                    .settle(hold, &self.name, priced(none, self.price.as_ref()))
                    .await;
                return Err(e);
            }
        };
        let (ledger, name, price) = (self.ledger.clone(), self.name.clone(), self.price);
        let mut hold = Some(hold);
        // The usage event comes once, at the end: it is priced there and the call settled (in
        // its own task, so the reader is not held up). A stream dropped before it leaves the
        // hold to the run's end, which releases what its calls still hold.
        let settled = stream.map(move |item| match item {
            Ok(StreamEvent::Usage(u)) => {
                let u = priced(u, price.as_ref());
                if let Some(h) = hold.take() {
                    let (ledger, name) = (ledger.clone(), name.clone());
                    tokio::spawn(async move { ledger.settle(h, &name, u).await });
                }
                Ok(StreamEvent::Usage(u))
            }
            other => other,
        });
        Ok(Box::pin(settled))
    }
}
