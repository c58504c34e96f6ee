//! The mock provider's replies: usage, errors, SSE chunk frames and the paced streamed answer.

use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use futures::stream::{self, StreamExt};
use serde_json::json;
use tokio::time::Instant;

use super::Shared;

/// Wall-clock microseconds since the UNIX epoch (0 if the clock is before it).
pub fn unix_micros() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0)
}

/// The stamps of a streamed text produced with `stamp_tokens`: each `~<digits>` suffix.
pub fn token_stamps(text: &str) -> impl Iterator<Item = u64> + '_ {
    text.split('~').skip(1).filter_map(|part| {
        let end = part
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(part.len());
        part[..end].parse().ok()
    })
}

pub(super) fn usage(prompt: u64, completion: u64) -> String {
    format!(
        r#"{{"prompt_tokens":{prompt},"completion_tokens":{completion},"total_tokens":{}}}"#,
        prompt + completion
    )
}

pub(super) fn error(status: StatusCode, message: &str) -> Response {
    let body = json!({"error": {"message": message, "type": "mock_error", "code": null}});
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// One SSE frame holding a `chat.completion.chunk` with these `choices` (JSON text).
fn chunk_frame(model: &str, choices: &str, extra: &str) -> Bytes {
    Bytes::from(format!(
        "data: {{\"id\":\"chatcmpl-mock\",\"object\":\"chat.completion.chunk\",\"created\":0,\"model\":{model},\"choices\":{choices}{extra}}}\n\n"
    ))
}

/// What one streamed reply sends besides its paced tokens.
pub(super) struct Streamed {
    /// Content sent with the role chunk, unstamped (a JSON action's opening).
    pub head: String,
    /// The paced content tokens (JSON string literals).
    pub tokens: Arc<[String]>,
    /// The delta of the finish chunk (JSON object text): `{}`, the rest of a JSON action's
    /// text, or the tool calls.
    pub tail: String,
    pub finish: &'static str,
    /// The reply's completion tokens; the token count when `None`.
    pub completion_tokens: Option<u64>,
}

impl Streamed {
    /// A text of `tokens`, nothing else.
    pub(super) fn text(tokens: Arc<[String]>) -> Self {
        Self {
            head: String::new(),
            tokens,
            tail: "{}".into(),
            finish: "stop",
            completion_tokens: None,
        }
    }
}

/// A streamed reply: `plan.tokens` (JSON string literals). Frame `0` is the role chunk (with
/// `plan.head`), frames `1..=n` the tokens, frame `n + 1` the tail (finish with `plan.tail`,
/// optional usage, `[DONE]`) in one write. Token `k` is due at `first_byte + k / rate`; the
/// role chunk and token 0 at `first_byte`.
pub(super) fn stream_answer(
    shared: Arc<Shared>,
    plan: Streamed,
    model: String,
    first_byte: Instant,
    prompt_tokens: u64,
    include_usage: bool,
) -> Response {
    let Streamed {
        head,
        tokens,
        tail,
        finish,
        completion_tokens,
    } = plan;
    // Shared by every frame's future without copying its strings each time.
    let frames = Arc::new(Frames {
        completion: completion_tokens.unwrap_or(tokens.len() as u64),
        head: serde_json::to_string(&head).unwrap_or_default(),
        tokens,
        tail,
        finish,
        model,
        first_byte,
        prompt_tokens,
        include_usage,
        shared,
    });
    let body = stream::unfold(0usize, move |frame| {
        let frames = Arc::clone(&frames);
        async move {
            let bytes = frames.next(frame).await?;
            Some((Ok::<_, std::convert::Infallible>(bytes), frame + 1))
        }
    });
    Response::builder()
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .body(Body::from_stream(body.boxed()))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

/// One streamed reply's frames, as [`stream_answer`] sends them.
struct Frames {
    shared: Arc<Shared>,
    /// The model's name as a JSON string literal.
    model: String,
    /// The role chunk's content as a JSON string literal.
    head: String,
    tokens: Arc<[String]>,
    tail: String,
    finish: &'static str,
    first_byte: Instant,
    prompt_tokens: u64,
    completion: u64,
    include_usage: bool,
}

impl Frames {
    /// Frame `frame` once it is due; `None` past the last one or when the mock shuts down.
    async fn next(&self, frame: usize) -> Option<Bytes> {
        let n = self.tokens.len();
        if frame > n + 1 {
            return None;
        }
        if let Some(due) = self.due(frame).filter(|d| *d > Instant::now()) {
            tokio::select! {
                () = tokio::time::sleep_until(due) => {}
                () = self.shared.shutdown.cancelled() => return None,
            }
        }
        Some(if frame == 0 {
            self.role()
        } else if frame <= n {
            self.token(&self.tokens[frame - 1])
        } else {
            self.tail()
        })
    }

    /// When frame `frame` is due; `None` (at once) when the rate leaves tokens unpaced.
    fn due(&self, frame: usize) -> Option<Instant> {
        let rate = self.shared.cfg.tokens_per_s;
        if frame <= 1 {
            Some(self.first_byte)
        } else if rate > 0.0 {
            Some(self.first_byte + Duration::from_secs_f64((frame - 1) as f64 / rate))
        } else {
            None
        }
    }

    fn role(&self) -> Bytes {
        let head = &self.head;
        chunk_frame(
            &self.model,
            &format!(
                r#"[{{"index":0,"delta":{{"role":"assistant","content":{head}}},"finish_reason":null}}]"#
            ),
            "",
        )
    }

    fn token(&self, token: &str) -> Bytes {
        let choices = if self.shared.cfg.stamp_tokens {
            // The literal is a quoted word without escapes: insert the stamp before
            // its closing quote.
            let word = token.strip_suffix('"').unwrap_or(token);
            format!(
                r#"[{{"index":0,"delta":{{"content":{word}~{}"}},"finish_reason":null}}]"#,
                unix_micros()
            )
        } else {
            format!(r#"[{{"index":0,"delta":{{"content":{token}}},"finish_reason":null}}]"#)
        };
        chunk_frame(&self.model, &choices, "")
    }

    /// The finish chunk, the usage chunk when asked for, and `[DONE]`, in one write.
    fn tail(&self) -> Bytes {
        let (tail, finish) = (&self.tail, self.finish);
        let mut out = chunk_frame(
            &self.model,
            &format!(r#"[{{"index":0,"delta":{tail},"finish_reason":"{finish}"}}]"#),
            "",
        )
        .to_vec();
        if self.include_usage {
            let extra = format!(",\"usage\":{}", usage(self.prompt_tokens, self.completion));
            out.extend_from_slice(&chunk_frame(&self.model, "[]", &extra));
        }
        out.extend_from_slice(b"data: [DONE]\n\n");
        Bytes::from(out)
    }
}
