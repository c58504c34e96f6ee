//! The SSE adapter (docs/api.md): turns a run's event stream (from [`crate::runs::RunManager`])
//! into `id: n` / `event: name` / `data: one-line JSON` frames, with a `: keep-alive` comment
//! after a quiet interval and the headers proxies need to not buffer.
//!
//! The response only *reads* the run's log through a cursor: when the client disconnects the
//! stream is dropped and nothing else happens — the run keeps going, owned by the run manager.

use std::convert::Infallible;
use std::fmt::Write as _;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{header, HeaderMap, HeaderName, HeaderValue};
use axum::response::{IntoResponse, Response};
use futures::stream::{BoxStream, Stream, StreamExt};
use tokio::time::{Instant, Sleep};

use super::error::ApiError;
use super::metrics::{Metrics, SubscriberGuard};
use crate::runs::LoggedEvent;

/// docs/api.md: a comment after 15 s without events.
pub const DEFAULT_KEEP_ALIVE: Duration = Duration::from_secs(15);

/// The keep-alive comment.
const KEEP_ALIVE_FRAME: &[u8] = b": keep-alive\n\n";

/// The SSE response for `events`. `keep_alive` is configurable so tests need not wait 15 s.
pub fn sse_response(
    events: BoxStream<'static, Arc<LoggedEvent>>,
    keep_alive: Duration,
    metrics: &Metrics,
) -> Response {
    let frames = Frames {
        events,
        keep_alive,
        timer: Box::pin(tokio::time::sleep(keep_alive)),
        last_sent: Instant::now(),
        gathered: String::new(),
        turns: 0,
        ended: false,
        // Lives as long as the stream: dropping the response decrements the gauge.
        _guard: metrics.sse_subscriber(),
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
        Body::from_stream(frames),
    )
        .into_response()
}

/// Events that follow the last write by less than this are a burst (an answer the provider
/// sent at once): they are gathered over a few scheduler turns and written together.
const BURST: Duration = Duration::from_millis(1);

/// Most scheduler turns a burst's frames wait for more events before they are written.
const MAX_TURNS: u8 = 4;

/// Most bytes of frames gathered into one body chunk.
const MAX_CHUNK: usize = 32 * 1024;

/// The response body: the frames of the events ready at once in one chunk, and a keep-alive
/// comment after `keep_alive` without one. In a burst, frames wait while more events keep
/// coming, one scheduler turn at a time (the task wakes itself; at most [`MAX_TURNS`]): a
/// write per event was a `writev` and a wake-up of the client per token (BENCHMARKS.md,
/// short runs). An event after a quiet spell is written at once. The keep-alive timer is not
/// moved on every event (a timer-wheel update per token per stream, as axum's `KeepAlive`
/// does): it stays where it was armed, and when it fires before `last_sent + keep_alive` it is
/// moved there.
struct Frames {
    events: BoxStream<'static, Arc<LoggedEvent>>,
    keep_alive: Duration,
    timer: Pin<Box<Sleep>>,
    last_sent: Instant,
    /// Frames gathered and not written yet.
    gathered: String,
    /// Turns the gathered frames have waited.
    turns: u8,
    /// The events ended: the body ends once `gathered` is written.
    ended: bool,
    _guard: SubscriberGuard,
}

impl Stream for Frames {
    type Item = Result<Bytes, Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        let mut got = false;
        while !this.ended && this.gathered.len() < MAX_CHUNK {
            match this.events.poll_next_unpin(cx) {
                Poll::Ready(Some(ev)) => {
                    push_frame(&mut this.gathered, &ev);
                    got = true;
                }
                Poll::Ready(None) => this.ended = true,
                Poll::Pending => break,
            }
        }
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
                return Poll::Ready(Some(Ok(Bytes::from_static(KEEP_ALIVE_FRAME))));
            }
            // Events were sent since the timer was armed: wait until the stream is quiet for
            // the whole interval.
            this.timer.as_mut().reset(due);
        }
    }
}

/// One event as an SSE frame: `id`, `event`, then `data` (one line per line of the data; the
/// engine's JSON has none, so that is one `data:` line), then a blank line.
#[cfg(test)]
fn frame(ev: &LoggedEvent) -> Bytes {
    let mut out = String::new();
    push_frame(&mut out, ev);
    Bytes::from(out)
}

/// Appends `ev`'s frame (see `frame`) to `out`.
fn push_frame(out: &mut String, ev: &LoggedEvent) {
    out.reserve(ev.name.len() + ev.data.len() + 40);
    // Writing to a String cannot fail.
    let _ = write!(out, "id: {}\nevent: {}\n", ev.id, ev.name);
    if ev.data.contains(['\n', '\r']) {
        for line in ev.data.split("\r\n").flat_map(|l| l.split(['\n', '\r'])) {
            out.push_str("data: ");
            out.push_str(line);
            out.push('\n');
        }
    } else {
        out.push_str("data: ");
        out.push_str(&ev.data);
        out.push('\n');
    }
    out.push('\n');
}

/// Where a subscriber resumes: the `Last-Event-ID` header wins over `?after=N`; 0 replays all.
pub fn resume_point(headers: &HeaderMap, after: Option<u64>) -> Result<u64, ApiError> {
    // Stored ids are below 2^63: anything above names a point past every event, not a wrap.
    resume_point_unclamped(headers, after).map(|id| id.min(i64::MAX as u64))
}

fn resume_point_unclamped(headers: &HeaderMap, after: Option<u64>) -> Result<u64, ApiError> {
    match headers.get("last-event-id") {
        Some(value) => {
            let text = value
                .to_str()
                .map_err(|_| ApiError::invalid("Last-Event-ID must be a number"))?
                .trim();
            if text.is_empty() {
                return Ok(after.unwrap_or(0));
            }
            text.parse()
                .map_err(|_| ApiError::invalid("Last-Event-ID must be a number"))
        }
        None => Ok(after.unwrap_or(0)),
    }
}

/// True when the client asked for an event stream (`Accept: text/event-stream`).
pub fn wants_event_stream(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.to_ascii_lowercase().contains("text/event-stream"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_wins_over_query_and_garbage_is_rejected() {
        let mut h = HeaderMap::new();
        assert_eq!(resume_point(&h, None).unwrap(), 0);
        assert_eq!(resume_point(&h, Some(4)).unwrap(), 4);
        h.insert("last-event-id", HeaderValue::from_static("7"));
        assert_eq!(resume_point(&h, Some(4)).unwrap(), 7);
        h.insert("last-event-id", HeaderValue::from_static("x"));
        assert!(resume_point(&h, None).is_err());
    }

    #[test]
    fn accept_detection() {
        let mut h = HeaderMap::new();
        assert!(!wants_event_stream(&h));
        h.insert(
            header::ACCEPT,
            HeaderValue::from_static("application/json, Text/Event-Stream"),
        );
        assert!(wants_event_stream(&h));
    }

    #[test]
    fn multi_line_data_becomes_several_data_lines() {
        let ev = LoggedEvent {
            id: 9,
            name: "step",
            data: "a\nb\r\nc".into(),
        };
        assert_eq!(
            frame(&ev),
            "id: 9\nevent: step\ndata: a\ndata: b\ndata: c\n\n"
        );
    }

    #[tokio::test]
    async fn keep_alive_on_a_quiet_stream_then_events_again() {
        let (tx, rx) = futures::channel::mpsc::unbounded::<Arc<LoggedEvent>>();
        let body = sse_response(rx.boxed(), Duration::from_millis(10), &Metrics::new());
        let mut body = body.into_body().into_data_stream();
        let ev = |id| {
            Arc::new(LoggedEvent {
                id,
                name: "step",
                data: "{}".into(),
            })
        };
        for id in 1..=3 {
            // Quiet: a comment comes (however long it takes), then the next event.
            let got = body.next().await.unwrap().unwrap();
            assert_eq!(got, KEEP_ALIVE_FRAME);
            tx.unbounded_send(ev(id)).unwrap();
            let mut got = body.next().await.unwrap().unwrap();
            while got == KEEP_ALIVE_FRAME {
                got = body.next().await.unwrap().unwrap();
            }
            assert_eq!(got, format!("id: {id}\nevent: step\ndata: {{}}\n\n"));
        }
        drop(tx);
        while let Some(frame) = body.next().await {
            assert_eq!(frame.unwrap(), KEEP_ALIVE_FRAME);
        }
    }

    #[tokio::test]
    async fn a_burst_shares_one_chunk_and_keeps_every_byte() {
        let events: Vec<Arc<LoggedEvent>> = (1..=30)
            .map(|id| {
                Arc::new(LoggedEvent {
                    id,
                    name: "answer",
                    data: format!("{{\"n\":{id}}}").into(),
                })
            })
            .collect();
        let expected: String = events
            .iter()
            .map(|e| String::from_utf8(frame(e).to_vec()).unwrap())
            .collect();
        let body = sse_response(
            futures::stream::iter(events).boxed(),
            DEFAULT_KEEP_ALIVE,
            &Metrics::new(),
        );
        let chunks: Vec<Bytes> = body
            .into_body()
            .into_data_stream()
            .map(|c| c.unwrap())
            .collect()
            .await;
        // Thirty events ready at once: one write, not thirty.
        assert_eq!(chunks.len(), 1);
        assert_eq!(std::str::from_utf8(&chunks[0]).unwrap(), expected);
    }

    #[tokio::test]
    async fn an_event_after_a_quiet_spell_is_not_held() {
        let (tx, rx) = futures::channel::mpsc::unbounded::<Arc<LoggedEvent>>();
        let body = sse_response(rx.boxed(), DEFAULT_KEEP_ALIVE, &Metrics::new());
        let mut body = body.into_body().into_data_stream();
        // Longer than `BURST` (a sleep is never shorter than asked).
        tokio::time::sleep(BURST * 5).await;
        tx.unbounded_send(Arc::new(LoggedEvent {
            id: 1,
            name: "step",
            data: "{}".into(),
        }))
        .unwrap();
        let first = futures::poll!(body.next());
        assert!(
            matches!(&first, Poll::Ready(Some(Ok(b))) if b == "id: 1\nevent: step\ndata: {}\n\n"),
            "{first:?}"
        );
    }

    #[tokio::test]
    async fn frames_have_id_event_and_data() {
        let body = sse_response(
            futures::stream::iter(vec![Arc::new(LoggedEvent {
                id: 3,
                name: "step",
                data: "{\"a\":1}".into(),
            })])
            .boxed(),
            DEFAULT_KEEP_ALIVE,
            &Metrics::new(),
        );
        assert_eq!(body.headers()["x-accel-buffering"], "no");
        assert_eq!(body.headers()[header::CONTENT_TYPE], "text/event-stream");
        let bytes = axum::body::to_bytes(body.into_body(), 1 << 16)
            .await
            .unwrap();
        assert_eq!(
            std::str::from_utf8(&bytes).unwrap(),
            "id: 3\nevent: step\ndata: {\"a\":1}\n\n"
        );
    }
}
