//! Sampling settings of a model or an agent (docs/configuration.md `temperature`, `top_p`,
//! `seed`): each is sent to the provider only when set, so an unset one leaves the provider's
//! own default in force.

use serde::Serialize;

/// `temperature`, `top_p` and `seed`, each optional.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Sampling {
    pub temperature: Option<f32>,
    pub top_p: Option<f32>,
    pub seed: Option<u64>,
}

impl Sampling {
    /// Whether nothing is set.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// `self`'s values where set, `under`'s elsewhere: an agent's settings over its model's.
    pub fn over(self, under: Sampling) -> Sampling {
        Sampling {
            temperature: self.temperature.or(under.temperature),
            top_p: self.top_p.or(under.top_p),
            seed: self.seed.or(under.seed),
        }
    }

    /// The first setting out of range, as `(field, value, expectation)`.
    pub fn invalid(&self) -> Option<(&'static str, f32, &'static str)> {
        if let Some(t) = self.temperature.filter(|t| !(0.0..=2.0).contains(t)) {
            return Some(("temperature", t, "expected a number from 0 to 2"));
        }
        if let Some(p) = self.top_p.filter(|p| !(*p > 0.0 && *p <= 1.0)) {
            return Some(("top_p", p, "expected a number greater than 0 and at most 1"));
        }
        None
    }
}
