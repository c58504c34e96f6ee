//! Fakes shared by unit tests, integration tests, benches and the mock provider. Compiled into
//! the library (they are small) so that `tests/` and `benches/` can use them.

pub mod fake_openai;
pub mod mock_provider;
pub mod scripted;

pub use scripted::{CallKind, ScriptedLlm, Turn};
