//! Budgets per tenant (docs/configuration.md `[[budgets]]`, docs/api.md): the rules, prices and
//! run cap a manager holds and which apply to a tenant now (`rules`), the admission of a new
//! run and the usage report (`admission`), and the [`Ledger`](ledger::Ledger) every LLM call
//! of a run passes through: reservation, cost, settlement, usage record (`ledger`). Nothing
//! here knows the run manager: it asks with a store and a tenant.

mod admission;
pub mod ledger;
mod rules;

pub use admission::{BudgetStatus, Refusal};
pub use rules::{Applied, Budgets, CallFloor, Clock};
