//! The values every layer shares: how a run ended ([`RunStatus`]), which loop protocol it used
//! ([`Mode`]) and which engine ([`Engine`]), the artifacts it announced ([`ArtifactRef`]), the
//! role and kind of a stored conversation turn ([`MessageRole`], [`MessageKind`]) and the SSE
//! `event:` names ([`EventName`]). The engine emits them, the store keeps them, the server sends
//! them; this module depends on nothing else in the crate, so none of those layers has to import
//! another to name them.
//!
//! [`text::clip`] cuts model-supplied text where logs and prompts quote it.
//!
//! Each enum's text (its JSON, its stored column and its SSE name) is written once, in the
//! table of [`text_enum!`]; serialisation and parsing both read that table.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

mod image;
mod price;
mod sampling;
mod synthesis;
pub mod text;

pub use image::{images_column, images_of_column, MessageImage};
pub use price::{Cost, Price};
pub use sampling::Sampling;
pub use synthesis::SynthesisPolicy;

/// Text that names none of an enum's values (`what` says which enum).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what}: {text:?}")]
pub struct UnknownValue {
    pub what: &'static str,
    pub text: String,
}

/// Declares a fieldless enum together with its one text table: `as_str`, `FromStr`,
/// `Display`, and serde as that text (unknown text is serde's usual "unknown variant" error).
macro_rules! text_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident ($what:literal) {
            $( $(#[$vmeta:meta])* $variant:ident => $text:literal, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $name {
            $( $(#[$vmeta])* $variant, )+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];
            const TEXTS: &'static [&'static str] = &[$($text),+];

            /// The text used on the wire and in storage.
            pub fn as_str(self) -> &'static str {
                match self {
                    $( $name::$variant => $text, )+
                }
            }
        }

        impl FromStr for $name {
            type Err = UnknownValue;
            fn from_str(text: &str) -> Result<Self, UnknownValue> {
                match text {
                    $( $text => Ok($name::$variant), )+
                    _ => Err(UnknownValue { what: $what, text: text.to_string() }),
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let text = std::borrow::Cow::<'de, str>::deserialize(d)?;
                text.parse()
                    .map_err(|_| serde::de::Error::unknown_variant(&text, $name::TEXTS))
            }
        }
    };
}

text_enum! {
    /// Which loop protocol a run uses.
    pub enum Mode ("mode") {
        Native => "native",
        Json => "json",
    }
}

text_enum! {
    /// Which engine runs a run: one ReAct loop, a planned graph of ReAct steps, or
    /// one structured call that picks between them.
    pub enum Engine ("engine") {
        React => "react",
        Dag => "dag",
        Auto => "auto",
    }
}

text_enum! {
    /// How a run ended (`done.status`); `Running` until it has.
    pub enum RunStatus ("run status") {
        Running => "running",
        Completed => "completed",
        MaxIterations => "max_iterations",
        BudgetExceeded => "budget_exceeded",
        Cancelled => "cancelled",
        Failed => "failed",
        RequiresAction => "requires_action",
    }
}

text_enum! {
    /// Where a run's answer comes from (`answer {status:"start", source}`): the loop's own
    /// reply, a synthesis call, or the tool results.
    pub enum AnswerSource ("answer source") {
        Reply => "reply",
        Synthesis => "synthesis",
        Results => "results",
    }
}

text_enum! {
    /// Who wrote a stored conversation turn.
    pub enum MessageRole ("message role") {
        User => "user",
        Assistant => "assistant",
    }
}

text_enum! {
    /// What a stored conversation turn is: the run's query, a follow-up sent while it ran, or
    /// its answer.
    pub enum MessageKind ("message kind") {
        Query => "query",
        Interrupt => "interrupt",
        Answer => "answer",
    }
}

text_enum! {
    /// The SSE `event:` names of docs/api.md, the one table every producer and reader of event
    /// names matches against.
    pub enum EventName ("event name") {
        Start => "start",
        Step => "step",
        Compact => "compact",
        Answer => "answer",
        Done => "done",
    }
}

impl EventName {
    /// The name of a stored event, read leniently: anything unknown reads as `done` (a run's
    /// log ends there, so a reader never waits on a name it does not know).
    pub fn from_stored(name: &str) -> EventName {
        name.parse().unwrap_or(EventName::Done)
    }
}

/// An artifact as announced in `tool_end`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ArtifactRef {
    pub id: String,
    pub name: String,
    pub mime_type: String,
    pub size: usize,
    pub url: String,
}

/// What a model can do beyond plain text; a `[[models]]` entry's `abilities`, read by the
/// client and the engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Abilities {
    pub tool_call: bool,
    pub json_mode: bool,
    pub tool_choice: bool,
    /// Image parts in user messages (docs/api.md "Images").
    #[serde(default = "yes")]
    pub vision: bool,
    /// `response_format: {type: "json_schema"}`: JSON mode sends the schema of its actions,
    /// which a grammar-constrained server enforces (docs/configuration.md). Off unless set.
    #[serde(default)]
    pub json_schema: bool,
}

fn yes() -> bool {
    true
}

impl Default for Abilities {
    fn default() -> Self {
        Self {
            tool_call: true,
            json_mode: true,
            tool_choice: true,
            vision: true,
            json_schema: false,
        }
    }
}

impl Abilities {
    /// A model that can only produce text.
    pub fn text_only() -> Self {
        Self {
            tool_call: false,
            json_mode: false,
            tool_choice: false,
            vision: false,
            json_schema: false,
        }
    }
}

/// The default cap on one model response's size (16 MiB), `LLM_MAX_RESPONSE_BYTES`.
pub const DEFAULT_LLM_MAX_RESPONSE_BYTES: usize = 16 * 1024 * 1024;

/// The prompt budget of a model: its context window minus what it keeps for its
/// output, at least one token. The context guard, compaction and the configuration all use this.
pub fn prompt_budget(context_window: u32, max_output_tokens: u32) -> u32 {
    context_window.saturating_sub(max_output_tokens).max(1)
}

/// Equal length and bytes, examining every byte (only the length leaks, as usual): how API
/// keys are compared, so timing reveals no prefix.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    std::hint::black_box(diff) == 0
}

/// The URL clients fetch an artifact from (docs/api.md).
pub fn artifact_url(id: &str) -> String {
    format!("/api/artifacts/{id}")
}

#[cfg(test)]
mod tests;
