//! The streamed response (docs/protocols.md): the encoder's frames as SSE (`event:` = the
//! JSON `type`, no `id:` lines) in the body every stream shares ([`crate::server::event_body`]:
//! bursts in one chunk, keep-alive comments in quiet stretches), `data: [DONE]` last. Frames
//! numbered at or below `starting_after` are left out (a resumed stream). A foreground stream
//! holds a [`CancelOnDrop`]: the client going away cancels its run.

use std::sync::Arc;
use std::time::Duration;

use axum::response::Response;
use futures::stream::BoxStream;

use super::encode::{Encoder, Frame};
use crate::runs::LoggedEvent;
use crate::server::event_body::{self, event_stream};
use crate::server::metrics::SubscriberGuard;
use crate::server::openai::stream::CancelOnDrop;

const DONE: &str = "data: [DONE]\n\n";

/// The Responses encoder as a body's encoder.
struct Streaming {
    encoder: Encoder,
    starting_after: Option<u64>,
    guard: Option<CancelOnDrop>,
}

impl Streaming {
    /// Appends `frames` as SSE text, those at or below `starting_after` left out.
    fn write(&self, frames: &[Frame], out: &mut String) {
        for f in frames {
            if self.starting_after.is_none_or(|n| f.seq > n) {
                f.write_to(out);
            }
        }
    }

    fn end(&mut self, out: &mut String) {
        out.push_str(DONE);
        if let Some(guard) = self.guard.as_mut() {
            guard.disarm();
        }
    }
}

impl event_body::Encoder for Streaming {
    fn event(&mut self, ev: &LoggedEvent, out: &mut String) -> bool {
        let frames = self.encoder.event(ev);
        self.write(&frames, out);
        let finished = self.encoder.finished();
        if finished {
            self.end(out);
        }
        finished
    }

    /// The log ended without `done` (never expected): end the stream properly.
    fn cut_short(&mut self, out: &mut String) {
        self.end(out);
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
        encoder,
        starting_after,
        guard,
    };
    let mut first = String::new();
    state.write(&state.encoder.prefix(), &mut first);
    event_stream(first, events, state, keep_alive, subscriber)
}
