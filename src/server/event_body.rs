//! The one streamed response body of every protocol (the native SSE, `/v1` chunks, the
//! Responses API, AG-UI, the AI SDK): a run's events through a protocol's [`Encoder`], the
//! frames of a burst gathered into one chunk, a `: keep-alive` comment after a quiet interval.
//! It only reads the run's log; what a client going away does is the encoder's business (the
//! OpenAI-style ones hold a guard that cancels the run).
//!
//! Bursts: events that follow the last write by less than [`BURST`] (an answer the provider
//! sent at once) are gathered over a few scheduler turns and written together; a write per
//! event was a `writev` and a wake-up of the client per token (BENCHMARKS.md). An event after a
//! quiet spell is written at once. The keep-alive timer is not moved on every event (a
//! timer-wheel update per token per stream): it stays where it was armed, and when it fires
//! before `last_sent + keep_alive` it is moved there.

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
use tokio::time::{Instant, Sleep};

use crate::runs::LoggedEvent;
use crate::server::metrics::SubscriberGuard;

const KEEP_ALIVE: &[u8] = b": keep-alive\n\n";

/// Events that follow the last write by less than this are a burst.
pub(super) const BURST: Duration = Duration::from_millis(1);

/// Most scheduler turns a burst's frames wait for more events before they are written.
const MAX_TURNS: u8 = 4;

/// Most bytes of frames gathered into one body chunk.
const MAX_CHUNK: usize = 32 * 1024;

/// A protocol's view of a run's events.
pub trait Encoder: Send + Unpin + 'static {
    /// Appends the text of one run event; true when the stream is complete.
    fn event(&mut self, ev: &LoggedEvent, out: &mut String) -> bool;
    /// Appends what closes a stream whose events ended before it was complete.
    fn cut_short(&mut self, out: &mut String);
}

/// The body: `first`, then the encoded events.
struct EventBody<E> {
    first: Option<Bytes>,
    events: BoxStream<'static, Arc<LoggedEvent>>,
    encoder: E,
    keep_alive: Duration,
    timer: Pin<Box<Sleep>>,
    last_sent: Instant,
    /// Text gathered and not written yet.
    gathered: String,
    /// Turns the gathered text has waited.
    turns: u8,
    /// Complete (or the events ended): the body ends once `gathered` is written.
    ended: bool,
    _subscriber: SubscriberGuard,
}

impl<E: Encoder> EventBody<E> {
    /// Encodes the events ready now into `gathered`; whether there were any.
    fn gather(&mut self, cx: &mut Context<'_>) -> bool {
        let mut got = false;
        while !self.ended && self.gathered.len() < MAX_CHUNK {
            match self.events.poll_next_unpin(cx) {
                Poll::Ready(Some(ev)) => {
                    got = true;
                    self.ended = self.encoder.event(&ev, &mut self.gathered);
                }
                Poll::Ready(None) => {
                    self.encoder.cut_short(&mut self.gathered);
                    self.ended = true;
                }
                Poll::Pending => break,
            }
        }
        got
    }
}

impl<E: Encoder> Stream for EventBody<E> {
    type Item = Result<Bytes, Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if let Some(first) = this.first.take() {
            this.last_sent = Instant::now();
            return Poll::Ready(Some(Ok(first)));
        }
        let got = this.gather(cx);
        if !this.gathered.is_empty() {
            let wait = got
                && !this.ended
                && this.gathered.len() < MAX_CHUNK
                && this.turns < MAX_TURNS
                && this.last_sent.elapsed() < BURST;
            if wait {
                this.turns += 1;
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            this.turns = 0;
            this.last_sent = Instant::now();
            let out = std::mem::take(&mut this.gathered);
            return Poll::Ready(Some(Ok(Bytes::from(out))));
        }
        if this.ended {
            return Poll::Ready(None);
        }
        loop {
            ready!(this.timer.as_mut().poll(cx));
            let due = this.last_sent + this.keep_alive;
            if this.timer.deadline() >= due {
                this.last_sent = Instant::now();
                this.timer.as_mut().reset(this.last_sent + this.keep_alive);
                return Poll::Ready(Some(Ok(Bytes::from_static(KEEP_ALIVE))));
            }
            // Sent since the timer was armed: wait until the stream is quiet for the interval.
            this.timer.as_mut().reset(due);
        }
    }
}

/// The `text/event-stream` response: `first` (what precedes the run's events, if anything),
/// then `events` through `encoder`.
pub fn event_stream<E: Encoder>(
    first: String,
    events: BoxStream<'static, Arc<LoggedEvent>>,
    encoder: E,
    keep_alive: Duration,
    subscriber: SubscriberGuard,
) -> Response {
    let body = EventBody {
        first: (!first.is_empty()).then(|| Bytes::from(first)),
        events,
        encoder,
        keep_alive,
        timer: Box::pin(tokio::time::sleep(keep_alive)),
        last_sent: Instant::now(),
        gathered: String::new(),
        turns: 0,
        ended: false,
        _subscriber: subscriber,
    };
    (
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
        .into_response()
}

/// The cost per answer delta of an encoder: `encode` is called on 100,000 deltas (one in ten
/// with an escape, which misses the borrowed path), five times; the median in nanoseconds.
#[cfg(test)]
pub(crate) fn time_deltas(mut encode: impl FnMut(&LoggedEvent)) -> f64 {
    let deltas: Vec<LoggedEvent> = (0..100_000u64)
        .map(|id| {
            let text = if id % 10 == 0 {
                "a \\\"quoted\\\" word"
            } else {
                " word"
            };
            let data = format!("{{\"status\":\"delta\",\"content\":\"{text}\"}}");
            LoggedEvent::stored(id + 1, "answer", data)
        })
        .collect();
    let mut times: Vec<f64> = (0..5)
        .map(|_| {
            let start = std::time::Instant::now();
            deltas.iter().for_each(&mut encode);
            start.elapsed().as_nanos() as f64 / deltas.len() as f64
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[2]
}
