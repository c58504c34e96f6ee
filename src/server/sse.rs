//! The SSE adapter (docs/api.md): turns a run's event stream (from [`crate::runs::RunManager`])
//! into `id: n` / `event: name` / `data: one-line JSON` frames, through the body every protocol
//! shares ([`super::event_body`]: bursts in one chunk, keep-alive comments, no-buffering headers).
//!
//! The response only *reads* the run's log through a cursor: when the client disconnects the
//! stream is dropped and nothing else happens — the run keeps going, owned by the run manager.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use axum::http::{header, HeaderMap};
use axum::response::Response;
use futures::stream::BoxStream;

use super::error::ApiError;
use super::event_body::{event_stream, Encoder};
use super::metrics::Metrics;
use crate::runs::LoggedEvent;

/// docs/api.md: a comment after 15 s without events.
pub const DEFAULT_KEEP_ALIVE: Duration = Duration::from_secs(15);

/// The SSE response for `events`. `keep_alive` is configurable so tests need not wait 15 s.
pub fn sse_response(
    events: BoxStream<'static, Arc<LoggedEvent>>,
    keep_alive: Duration,
    metrics: &Metrics,
) -> Response {
    // The subscriber guard lives as long as the stream: dropping the response decrements the gauge.
    event_stream(
        String::new(),
        events,
        Native,
        keep_alive,
        metrics.sse_subscriber(),
    )
}

/// reagent's own frames: each event as it is stored.
struct Native;

impl Encoder for Native {
    fn event(&mut self, ev: &LoggedEvent, out: &mut String) -> bool {
        push_frame(out, ev);
        false
    }

    /// The log ends after `done`: nothing to add.
    fn cut_short(&mut self, _out: &mut String) {}
}

/// One event as an SSE frame: `id`, `event`, then `data` (one line per line of the data; the
/// engine's JSON has none, so that is one `data:` line), then a blank line.
#[cfg(test)]
fn frame(ev: &LoggedEvent) -> axum::body::Bytes {
    let mut out = String::new();
    push_frame(&mut out, ev);
    axum::body::Bytes::from(out)
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
    use crate::server::event_body::BURST;
    use axum::body::Bytes;
    use axum::http::HeaderValue;
    use futures::StreamExt;
    use std::task::Poll;

    const KEEP_ALIVE_FRAME: &[u8] = b": keep-alive\n\n";

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
