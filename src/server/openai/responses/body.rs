//! The streamed response (docs/protocols.md): the encoder's frames as SSE (`event:` = the
//! JSON `type`, no `id:` lines), keep-alive comments in quiet stretches, `data: [DONE]` last.
//! Frames numbered at or below `starting_after` are left out (a resumed stream). A foreground
//! stream holds a [`CancelOnDrop`]: the client going away cancels its run.

use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use futures::stream::{self, BoxStream, StreamExt};

use super::encode::{Encoder, Frame};
use crate::runs::LoggedEvent;
use crate::server::metrics::SubscriberGuard;
use crate::server::openai::stream::CancelOnDrop;

const KEEP_ALIVE: &[u8] = b": keep-alive\n\n";
const DONE: &str = "data: [DONE]\n\n";

/// What the body stream carries between polls.
struct Streaming {
    events: BoxStream<'static, Arc<LoggedEvent>>,
    encoder: Encoder,
    starting_after: Option<u64>,
    guard: Option<CancelOnDrop>,
    keep_alive: Duration,
    /// Sent `[DONE]`: the next poll ends the body.
    ended: bool,
    _subscriber: SubscriberGuard,
}

impl Streaming {
    /// `frames` as SSE text, those at or below `starting_after` left out.
    fn text(&self, frames: &[Frame]) -> String {
        let mut out = String::new();
        for f in frames {
            if self.starting_after.is_none_or(|n| f.seq > n) {
                f.write_to(&mut out);
            }
        }
        out
    }

    fn end(&mut self, mut out: String) -> Bytes {
        out.push_str(DONE);
        self.ended = true;
        if let Some(guard) = self.guard.as_mut() {
            guard.disarm();
        }
        Bytes::from(out)
    }

    /// The next chunk of the body; `None` once `[DONE]` was sent.
    async fn next_chunk(&mut self) -> Option<Bytes> {
        if self.ended {
            return None;
        }
        loop {
            match tokio::time::timeout(self.keep_alive, self.events.next()).await {
                Err(_) => return Some(Bytes::from_static(KEEP_ALIVE)),
                // The log ended without `done` (never expected): end the stream properly.
                Ok(None) => return Some(self.end(String::new())),
                Ok(Some(ev)) => {
                    let frames = self.encoder.event(&ev);
                    let out = self.text(&frames);
                    if self.encoder.finished() {
                        return Some(self.end(out));
                    }
                    if !out.is_empty() {
                        return Some(Bytes::from(out));
                    }
                }
            }
        }
    }
}

/// The SSE response of `events` (a run's log from its first event) through `encoder`.
pub fn sse(
    events: BoxStream<'static, Arc<LoggedEvent>>,
    encoder: Encoder,
    starting_after: Option<u64>,
    guard: Option<CancelOnDrop>,
    keep_alive: Duration,
    subscriber: SubscriberGuard,
) -> Response {
    let state = Streaming {
        events,
        encoder,
        starting_after,
        guard,
        keep_alive,
        ended: false,
        _subscriber: subscriber,
    };
    let first = Bytes::from(state.text(&state.encoder.prefix()));
    let rest = stream::unfold(state, |mut state| async move {
        let chunk = state.next_chunk().await?;
        Some((Ok::<_, std::convert::Infallible>(chunk), state))
    });
    let body = stream::once(async move { Ok(first) }).chain(rest);
    (
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/event-stream"),
            ),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
            (
                header::HeaderName::from_static("x-accel-buffering"),
                HeaderValue::from_static("no"),
            ),
        ],
        Body::from_stream(body),
    )
        .into_response()
}
