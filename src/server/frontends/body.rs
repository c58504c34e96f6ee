//! The response body both protocols share: a run's events through a protocol's [`Encoder`] as
//! `data:` lines, a `: keep-alive` comment after a quiet interval (both official clients skip
//! comments), ended when the encoder says so. It only reads the run's log: a client that goes
//! away drops it and the run goes on (docs/protocols.md).

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{header, HeaderName, HeaderValue};
use axum::response::{IntoResponse, Response};
use futures::stream::{BoxStream, Stream, StreamExt};
use serde::Serialize;
use tokio::time::{Instant, Sleep};

use crate::runs::LoggedEvent;
use crate::server::metrics::SubscriberGuard;
use crate::server::state::AppState;

const KEEP_ALIVE: &[u8] = b": keep-alive\n\n";

/// A protocol's view of a run's events.
pub trait Encoder: Send + Unpin + 'static {
    /// Appends the lines for one run event; true when the stream is complete.
    fn event(&mut self, ev: &LoggedEvent, out: &mut String) -> bool;
    /// Appends the lines that close a stream whose events ended without `done` (not expected).
    fn cut_short(&mut self, out: &mut String);
}

/// Appends `data: <json>` and the blank line.
pub fn data(out: &mut String, value: &impl Serialize) {
    out.push_str("data: ");
    // Serialising a `Value` or a plain struct into a String cannot fail.
    if let Ok(json) = serde_json::to_string(value) {
        out.push_str(&json);
    }
    out.push_str("\n\n");
}

struct EncodedBody<E> {
    first: Option<Bytes>,
    events: BoxStream<'static, Arc<LoggedEvent>>,
    encoder: E,
    keep_alive: Duration,
    timer: Pin<Box<Sleep>>,
    last_sent: Instant,
    finished: bool,
    _subscriber: SubscriberGuard,
}

impl<E: Encoder> Stream for EncodedBody<E> {
    type Item = Result<Bytes, Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if let Some(first) = this.first.take() {
            return Poll::Ready(Some(Ok(first)));
        }
        if this.finished {
            return Poll::Ready(None);
        }
        let mut out = String::new();
        // Every event ready now goes into one chunk (an answer's burst of deltas).
        loop {
            match this.events.poll_next_unpin(cx) {
                Poll::Ready(Some(ev)) => {
                    if this.encoder.event(&ev, &mut out) {
                        this.finished = true;
                        break;
                    }
                }
                Poll::Ready(None) => {
                    this.encoder.cut_short(&mut out);
                    this.finished = true;
                    break;
                }
                Poll::Pending => break,
            }
        }
        if !out.is_empty() {
            this.last_sent = Instant::now();
            return Poll::Ready(Some(Ok(Bytes::from(out))));
        }
        if this.finished {
            return Poll::Ready(None);
        }
        // As in `sse`: the timer is moved only when it fires early, not on every event.
        loop {
            ready!(this.timer.as_mut().poll(cx));
            let due = this.last_sent + this.keep_alive;
            if this.timer.deadline() >= due {
                this.last_sent = Instant::now();
                this.timer.as_mut().reset(this.last_sent + this.keep_alive);
                return Poll::Ready(Some(Ok(Bytes::from_static(KEEP_ALIVE))));
            }
            this.timer.as_mut().reset(due);
        }
    }
}

/// The event-stream response: `first` (what precedes the run's events), then the encoded events.
pub fn encoded_response<E: Encoder>(
    state: &AppState,
    first: String,
    events: BoxStream<'static, Arc<LoggedEvent>>,
    encoder: E,
    extra: Option<(HeaderName, HeaderValue)>,
) -> Response {
    let body = EncodedBody {
        first: (!first.is_empty()).then(|| Bytes::from(first)),
        events,
        encoder,
        keep_alive: state.keep_alive,
        timer: Box::pin(tokio::time::sleep(state.keep_alive)),
        last_sent: Instant::now(),
        finished: false,
        _subscriber: state.metrics.sse_subscriber(),
    };
    let mut response = (
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/event-stream"),
            ),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
            (
                HeaderName::from_static("x-accel-buffering"),
                HeaderValue::from_static("no"),
            ),
        ],
        Body::from_stream(body),
    )
        .into_response();
    if let Some((name, value)) = extra {
        response.headers_mut().insert(name, value);
    }
    response
}
