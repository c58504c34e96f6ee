//! Fakes shared by unit tests, integration tests and benches, and nothing else (the mock provider
//! of `serve --demo` and the load generator is the `reagent-mock` crate). Compiled into the
//! library (they are small) so that `tests/` and `benches/` can use them; `schema` checks values
//! against the OpenAPI document's schemas.

pub mod fake_anthropic;
pub mod fake_openai;
pub mod routed;
pub mod schema;
pub mod scripted;

pub use scripted::{CallKind, ScriptedLlm, Turn};
