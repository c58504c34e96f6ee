//! The SSE adapter (SPEC §4): turns a run's event stream (from [`crate::runs::RunManager`])
//! into `id: n` / `event: name` / `data: one-line JSON` frames, with a `: keep-alive` comment
//! after a quiet interval and the headers proxies need to not buffer.
//!
//! The response only *reads* the run's log through a cursor: when the client disconnects the
//! stream is dropped and nothing else happens — the run keeps going, owned by the run manager.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::http::{header, HeaderMap, HeaderName, HeaderValue};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::stream::{BoxStream, StreamExt};

use super::error::ApiError;
use super::metrics::Metrics;
use crate::runs::LoggedEvent;

/// SPEC §4: a comment after 15 s without events.
pub const DEFAULT_KEEP_ALIVE: Duration = Duration::from_secs(15);

/// The SSE response for `events`. `keep_alive` is configurable so tests need not wait 15 s.
pub fn sse_response(
    events: BoxStream<'static, Arc<LoggedEvent>>,
    keep_alive: Duration,
    metrics: &Metrics,
) -> Response {
    let guard = metrics.sse_subscriber();
    let frames = events.map(move |ev| {
        // The guard lives as long as the stream: dropping the response decrements the gauge.
        let _ = &guard;
        Ok::<_, Infallible>(frame(&ev))
    });
    let sse = Sse::new(frames).keep_alive(KeepAlive::new().interval(keep_alive).text("keep-alive"));
    (
        [
            (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
            (
                HeaderName::from_static("x-accel-buffering"),
                HeaderValue::from_static("no"),
            ),
        ],
        sse,
    )
        .into_response()
}

/// One event as an SSE frame.
fn frame(ev: &LoggedEvent) -> Event {
    Event::default()
        .id(ev.id.to_string())
        .event(&ev.name)
        .data(&ev.data)
}

/// Where a subscriber resumes: the `Last-Event-ID` header wins over `?after=N`; 0 replays all.
pub fn resume_point(headers: &HeaderMap, after: Option<u64>) -> Result<u64, ApiError> {
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

    #[tokio::test]
    async fn frames_have_id_event_and_data() {
        let body = sse_response(
            futures::stream::iter(vec![Arc::new(LoggedEvent {
                id: 3,
                name: "step".into(),
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
