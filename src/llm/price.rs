//! Costs of calls (docs/configuration.md `price`): a model without a price costs 0 and its calls
//! are counted as unpriced (`usage.unpriced_calls`): a cost is never guessed.

pub use crate::domain::{Cost, Price};

use super::Usage;

/// `usage` (one call's, or a stream's usage event) with its cost at `price`; unpriced when the
/// model has none.
pub fn priced(mut usage: Usage, price: Option<&Price>) -> Usage {
    match price {
        Some(p) => {
            // `prompt_tokens` counts the cached tokens too; they are priced at their own rates.
            usage.cost_usd = p.cost(
                usage.prompt_tokens,
                usage.completion_tokens,
                usage.cache_read_tokens,
                usage.cache_write_tokens,
            );
            usage.unpriced_calls = 0;
        }
        None => {
            usage.cost_usd = Cost::ZERO;
            usage.unpriced_calls = usage.llm_calls;
        }
    }
    usage
}

#[cfg(test)]
mod tests;
