//! `synthesis = "auto" | "always" | "never"` of a `[[models]]` or `[[agents]]` entry
//! (docs/configuration.md): whether a run's answer is written by a separate synthesis call.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::UnknownValue;

/// When a run ends with a synthesis call that writes its answer from the trace.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum SynthesisPolicy {
    /// The loop's calls stream; a reply that passes the answer checks is the answer, streamed
    /// while it is written; synthesis runs only when none does.
    #[default]
    Auto,
    /// Every run ends with a synthesis call (the two phases of the original design).
    Always,
    /// No synthesis call: the loop's reply, or an answer built from the tool results.
    Never,
}

impl SynthesisPolicy {
    pub const ALL: &'static [SynthesisPolicy] = &[Self::Auto, Self::Always, Self::Never];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Always => "always",
            Self::Never => "never",
        }
    }

    /// The old boolean setting: `true` was a synthesis call on every run, `false` none.
    pub fn from_bool(on: bool) -> Self {
        if on {
            Self::Always
        } else {
            Self::Never
        }
    }

    /// Whether the loop's calls stream their reply (an answer candidate reaches the client
    /// while it is written).
    pub fn streams_replies(self) -> bool {
        self != Self::Always
    }
}

impl FromStr for SynthesisPolicy {
    type Err = UnknownValue;
    fn from_str(text: &str) -> Result<Self, UnknownValue> {
        Self::ALL
            .iter()
            .copied()
            .find(|p| p.as_str() == text)
            .ok_or_else(|| UnknownValue {
                what: "synthesis policy",
                text: text.to_string(),
            })
    }
}

impl fmt::Display for SynthesisPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for SynthesisPolicy {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for SynthesisPolicy {
    /// `"auto"`, `"always"`, `"never"`, or the old booleans.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Written {
            Flag(bool),
            Text(String),
        }
        match Written::deserialize(d) {
            Ok(Written::Flag(on)) => Ok(Self::from_bool(on)),
            Ok(Written::Text(t)) => t.parse().map_err(|_| {
                serde::de::Error::custom(format!(
                    "unknown synthesis policy {t:?}: expected \"auto\", \"always\" or \"never\" \
                     (or true/false)"
                ))
            }),
            Err(_) => Err(serde::de::Error::custom(
                "expected \"auto\", \"always\" or \"never\" (or true/false)",
            )),
        }
    }
}
