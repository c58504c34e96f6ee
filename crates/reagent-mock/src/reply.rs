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
    let n = tokens.len();
    let completion = completion_tokens.unwrap_or(n as u64);
    let head: Arc<str> = serde_json::to_string(&head).unwrap_or_default().into();
    let tail: Arc<str> = tail.into();
    let rate = shared.cfg.tokens_per_s;
    // Shared by every frame's future without copying the string each time.
    let model: Arc<str> = model.into();
    let frames = stream::unfold(0usize, move |frame| {
        let shared = Arc::clone(&shared);
        let tokens = Arc::clone(&tokens);
        let model = Arc::clone(&model);
        let (head, tail) = (Arc::clone(&head), Arc::clone(&tail));
        async move {
            if frame > n + 1 {
                return None;
            }
            let due = if frame <= 1 {
                Some(first_byte)
            } else if rate > 0.0 {
                Some(first_byte + Duration::from_secs_f64((frame - 1) as f64 / rate))
            } else {
                None
            };
            if let Some(due) = due.filter(|d| *d > Instant::now()) {
                tokio::select! {
                    () = tokio::time::sleep_until(due) => {}
                    () = shared.shutdown.cancelled() => return None,
                }
            }
            let bytes = if frame == 0 {
                chunk_frame(
                    &model,
                    &format!(
                        r#"[{{"index":0,"delta":{{"role":"assistant","content":{head}}},"finish_reason":null}}]"#
                    ),
                    "",
                )
            } else if frame <= n {
                let token = &tokens[frame - 1];
                let choices = if shared.cfg.stamp_tokens {
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
                chunk_frame(&model, &choices, "")
            } else {
                let mut out = chunk_frame(
                    &model,
                    &format!(r#"[{{"index":0,"delta":{tail},"finish_reason":"{finish}"}}]"#),
                    "",
                )
                .to_vec();
                if include_usage {
                    let extra = format!(",\"usage\":{}", usage(prompt_tokens, completion));
                    out.extend_from_slice(&chunk_frame(&model, "[]", &extra));
                }
                out.extend_from_slice(b"data: [DONE]\n\n");
                Bytes::from(out)
            };
            Some((Ok::<_, std::convert::Infallible>(bytes), frame + 1))
        }
    });
    Response::builder()
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .body(Body::from_stream(frames.boxed()))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}
