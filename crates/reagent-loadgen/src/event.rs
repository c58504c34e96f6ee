//! One SSE event as the load generator received it: what the stream checks (`verify`,
//! `verify_dag`, `takeover`) and the clients (`conv`, `multi`, `side`) share.

use serde_json::Value;

/// One received SSE event.
#[derive(Clone, Debug)]
pub struct Ev {
    /// The `id:` field as sent (checked to be a number).
    pub id: String,
    pub name: String,
    pub data: Value,
}
