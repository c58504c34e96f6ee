//! The Responses API (docs/protocols.md): agents over `POST /v1/responses`, as standardised by
//! Open Responses. One response is one run (`resp_<run id>`), started through the same
//! [`crate::runs::RunManager`] calls as `/api`; nothing here is a second engine. Files:
//! `request` (the body, leniently read), `tools` (the one place `tools` and `tool_choice` map
//! onto a run), `create` (the handler), `read` (retrieve, resume, cancel, delete, input items),
//! `load` (a stored response read back), `encode` (the run's events → Responses events and
//! object, with their sequence numbers), `object` (the response object, its items, and how a run's outcome reads as a status), `body` (the SSE body), `openapi` (these routes in the OpenAPI document).

mod body;
mod create;
mod encode;
mod load;
mod object;
pub mod openapi;
mod read;
mod request;
mod tools;

pub use create::create;
pub use read::{cancel, delete, input_items, retrieve};
