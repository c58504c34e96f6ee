//! The budget settings a run manager holds (docs/configuration.md `[[budgets]]`): the rules,
//! the prices, the per-tenant run cap and the clock, and which budgets apply to a tenant now.
//! The admission that uses them is `admission.rs`; the reservation before each call is the
//! run's [`Ledger`](super::ledger::Ledger).

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};

use crate::config::{BudgetSpec, BudgetWindow, EVERY_TENANT};
use crate::domain::{Cost, Price};
use crate::store::{WindowLimit, WindowSpend};

/// What time it is: the wall clock, or a test's.
pub type Clock = Arc<dyn Fn() -> DateTime<Utc> + Send + Sync>;

/// The service's budgets, prices and per-tenant run cap.
#[derive(Clone)]
pub struct Budgets {
    pub rules: Vec<BudgetSpec>,
    /// By registry name; a model missing here has no price.
    pub prices: HashMap<String, Price>,
    pub max_active_runs_per_tenant: Option<u32>,
    pub clock: Clock,
}

impl Default for Budgets {
    fn default() -> Self {
        Self {
            rules: Vec::new(),
            prices: HashMap::new(),
            max_active_runs_per_tenant: None,
            clock: Arc::new(Utc::now),
        }
    }
}

impl std::fmt::Debug for Budgets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Budgets")
            .field("rules", &self.rules)
            .field("prices", &self.prices)
            .finish_non_exhaustive()
    }
}

/// The least one call of a run reserves: its prompt so far and its model's `max_output_tokens`
/// (`tokens`), priced at their worst case for a model with a price (`cost`; `None`: the call is
/// held to token limits only). A run whose first call cannot fit is refused before it starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallFloor {
    pub tokens: u64,
    pub cost: Option<Cost>,
}

/// One budget as it applies to a tenant now.
#[derive(Clone, Debug)]
pub struct Applied<'a> {
    pub rule: &'a BudgetSpec,
    pub starts_at: DateTime<Utc>,
    pub ends_at: DateTime<Utc>,
}

impl Applied<'_> {
    pub fn limit(&self) -> WindowLimit {
        WindowLimit {
            kind: self.rule.window.as_str(),
            starts_at: self.starts_at.timestamp_micros(),
            tokens: self.rule.tokens.map(to_i64),
            nanos: self
                .rule
                .cost_usd
                .map(|c| to_i64(Cost::from_usd(c).nanos())),
        }
    }

    /// A call reserving `call` does not fit what the window's settled spend leaves: the run it
    /// would start is refused (calls in flight are not counted: they settle within seconds).
    pub fn refuses(&self, s: &WindowSpend, call: CallFloor) -> bool {
        let l = self.limit();
        let over = |spent: i64, need: u64, limit: i64| {
            i128::from(spent) + i128::from(need) > i128::from(limit)
        };
        l.tokens
            .is_some_and(|t| over(s.spent_tokens, call.tokens, t))
            || call
                .cost
                .zip(l.nanos)
                .is_some_and(|(c, n)| over(s.spent_nanos, c.nanos(), n))
    }

    /// The warning threshold is reached on either limit.
    pub fn past_warning(&self, s: &WindowSpend) -> bool {
        let pct = i128::from(self.rule.warn_at_percent);
        let l = self.limit();
        let over = |spent: i64, limit: i64| i128::from(spent) * 100 >= i128::from(limit) * pct;
        l.tokens.is_some_and(|t| over(s.spent_tokens, t))
            || l.nanos.is_some_and(|n| over(s.spent_nanos, n))
    }
}

fn to_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

impl Budgets {
    /// The budgets of `tenant` at `now`, day then week then month: its own for a window, else
    /// `"*"`'s.
    pub fn applied(&self, tenant: &str, now: DateTime<Utc>) -> Vec<Applied<'_>> {
        [BudgetWindow::Day, BudgetWindow::Week, BudgetWindow::Month]
            .into_iter()
            .filter_map(|w| {
                let own = self
                    .rules
                    .iter()
                    .find(|r| r.window == w && r.tenant == tenant);
                let rule = own.or_else(|| {
                    self.rules
                        .iter()
                        .find(|r| r.window == w && r.tenant == EVERY_TENANT)
                })?;
                Some(Applied {
                    rule,
                    starts_at: w.start(now),
                    ends_at: w.end(now),
                })
            })
            .collect()
    }

    pub fn now(&self) -> DateTime<Utc> {
        (self.clock)()
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(tenant: &str, window: BudgetWindow, tokens: u64) -> BudgetSpec {
        BudgetSpec {
            tenant: tenant.into(),
            window,
            tokens: Some(tokens),
            cost_usd: None,
            warn_at_percent: 80,
        }
    }

    #[test]
    fn a_tenants_own_budget_replaces_the_star_for_its_window() {
        let b = Budgets {
            rules: vec![
                rule("*", BudgetWindow::Day, 10),
                rule("alice", BudgetWindow::Day, 99),
                rule("*", BudgetWindow::Month, 1000),
            ],
            ..Budgets::default()
        };
        let now = Utc::now();
        let alice: Vec<u64> = b
            .applied("alice", now)
            .iter()
            .filter_map(|a| a.rule.tokens)
            .collect();
        assert_eq!(alice, vec![99, 1000]);
        let bob: Vec<u64> = b
            .applied("bob", now)
            .iter()
            .filter_map(|a| a.rule.tokens)
            .collect();
        assert_eq!(bob, vec![10, 1000]);
    }
}
