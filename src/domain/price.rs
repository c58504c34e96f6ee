//! Prices and costs (docs/configuration.md `price`): a model's [`Price`] in USD per million
//! tokens, and [`Cost`], an amount of USD kept as whole nano-dollars so that sums are exact,
//! `Eq`, and stored as 64-bit integers on both databases.

use std::ops::{Add, AddAssign};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The largest amount kept, as the databases' 64-bit integers store it.
const MAX_NANOS: u64 = i64::MAX.unsigned_abs();

/// Nano-dollars in one USD.
const NANOS_PER_USD: f64 = 1e9;

/// `[[models]] price`: USD per million tokens of each kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    #[serde(default)]
    pub input: f64,
    #[serde(default)]
    pub output: f64,
    #[serde(default)]
    pub cache_read: f64,
    #[serde(default)]
    pub cache_write: f64,
}

impl Price {
    /// The fields by name, for validation messages.
    pub fn fields(&self) -> [(&'static str, f64); 4] {
        [
            ("input", self.input),
            ("output", self.output),
            ("cache_read", self.cache_read),
            ("cache_write", self.cache_write),
        ]
    }

    /// The first field that is negative or not finite, if any.
    pub fn invalid_field(&self) -> Option<(&'static str, f64)> {
        self.fields()
            .into_iter()
            .find(|(_, v)| !v.is_finite() || *v < 0.0)
    }

    /// What a call costs at this price: `prompt` tokens in, of which `cache_read` were read
    /// from the provider's cache and `cache_write` written to it (each priced at its own rate,
    /// the rest at `input`), and `completion` tokens out.
    pub fn cost(&self, prompt: u64, completion: u64, cache_read: u64, cache_write: u64) -> Cost {
        let uncached = prompt
            .saturating_sub(cache_read)
            .saturating_sub(cache_write);
        Cost::of(uncached, self.input)
            + Cost::of(cache_read, self.cache_read)
            + Cost::of(cache_write, self.cache_write)
            + Cost::of(completion, self.output)
    }

    /// The most a call of `prompt` tokens and at most `max_output` tokens out can cost.
    pub fn worst_case(&self, prompt: u64, max_output: u64) -> Cost {
        Cost::of(prompt, self.input.max(self.cache_write)) + Cost::of(max_output, self.output)
    }
}

/// An amount of USD, in whole nano-dollars; written as a USD number in JSON.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Cost(u64);

impl Cost {
    pub const ZERO: Cost = Cost(0);

    pub fn from_nanos(nanos: u64) -> Self {
        Self(nanos.min(MAX_NANOS))
    }

    pub fn nanos(self) -> u64 {
        self.0
    }

    /// `usd`, rounded up to the next nano-dollar (a price never rounds to free); negative or
    /// non-finite amounts are 0.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // Checked finite, >= 0.
    pub fn from_usd(usd: f64) -> Self {
        let nanos = (usd * NANOS_PER_USD).ceil();
        if nanos.is_finite() && nanos > 0.0 {
            Self::from_nanos(nanos as u64)
        } else {
            Self::ZERO
        }
    }

    #[allow(clippy::cast_precision_loss)] // Amounts far below 2^53 nano-dollars.
    pub fn usd(self) -> f64 {
        self.0 as f64 / NANOS_PER_USD
    }

    #[allow(clippy::cast_precision_loss)]
    fn of(tokens: u64, usd_per_million: f64) -> Self {
        Self::from_usd(tokens as f64 * usd_per_million / 1e6)
    }
}

impl Add for Cost {
    type Output = Cost;
    fn add(self, o: Cost) -> Cost {
        Cost::from_nanos(self.0.saturating_add(o.0))
    }
}

impl AddAssign for Cost {
    fn add_assign(&mut self, o: Cost) {
        *self = *self + o;
    }
}

impl Serialize for Cost {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(self.usd())
    }
}

impl<'de> Deserialize<'de> for Cost {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Cost::from_usd(f64::deserialize(d)?))
    }
}
