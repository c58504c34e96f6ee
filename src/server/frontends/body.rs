//! The response both protocols share: a run's events through a protocol's [`Encoder`] as
//! `data:` lines in the body every stream shares ([`crate::server::event_body`]: bursts in one
//! chunk, `: keep-alive` comments, which both official clients skip), ended when the encoder
//! says so. It only reads the run's log: a client that goes away drops it and the run goes on
//! (docs/protocols.md).

use std::sync::Arc;

use axum::http::{HeaderName, HeaderValue};
use axum::response::Response;
use futures::stream::BoxStream;
use serde::Serialize;

use crate::runs::LoggedEvent;
use crate::server::event_body::event_stream;
pub use crate::server::event_body::Encoder;
use crate::server::state::AppState;

/// Appends `data: <json>` and the blank line.
pub fn data(out: &mut String, value: &impl Serialize) {
    out.push_str("data: ");
    // Serialising a `Value` or a plain struct into a String cannot fail.
    if let Ok(json) = serde_json::to_string(value) {
        out.push_str(&json);
    }
    out.push_str("\n\n");
}

/// An event's data as stored (null if it is not JSON), for the events passed on as they are.
pub fn stored(ev: &LoggedEvent) -> serde_json::Value {
    serde_json::from_str(&ev.data).unwrap_or(serde_json::Value::Null)
}

/// The event-stream response: `first` (what precedes the run's events), then the encoded events.
pub fn encoded_response<E: Encoder>(
    state: &AppState,
    first: String,
    events: BoxStream<'static, Arc<LoggedEvent>>,
    encoder: E,
    extra: Option<(HeaderName, HeaderValue)>,
) -> Response {
    let subscriber = state.metrics.sse_subscriber();
    let mut response = event_stream(first, events, encoder, state.keep_alive, subscriber);
    if let Some((name, value)) = extra {
        response.headers_mut().insert(name, value);
    }
    response
}
