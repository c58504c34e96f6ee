//! Fakes shared by unit tests, integration tests, benches and the mock provider. Compiled into
//! the library (they are small) so that `tests/` and `benches/` can use them; `schema` checks
//! values against the OpenAPI document's schemas.

pub mod fake_anthropic;
pub mod fake_openai;
pub mod mock_provider;
pub mod mock_structured;
pub mod routed;
pub mod schema;
pub mod scripted;

pub use scripted::{CallKind, ScriptedLlm, Turn};
