//! [`FakeAnthropic`]: an in-process Anthropic Messages server (axum on `127.0.0.1:0`) for
//! testing the native client and the whole loop over it.
//!
//! It answers `POST /v1/messages` with a `message`, or with its SSE events when the request
//! says `stream: true` (`message_start`, each block's `content_block_start`, deltas split in
//! pieces and `content_block_stop`, a `ping`, `message_delta`, `message_stop`). Every object
//! is a template of `fixtures.json`, written by the official SDK's types
//! (`tests/peers/anthropic_fixtures.py`), filled with the scripted reply ([`AnthropicReply`];
//! first in first out, then a default text).
//!
//! Like Anthropic with extended thinking, it answers 400 when a request to a model carries an
//! earlier tool-use turn of that model without the `thinking` / `redacted_thinking` blocks it
//! was sent with, or with them altered (`thinking.rs`). Every request body and its
//! `x-api-key` / `anthropic-version` headers are recorded.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

mod thinking;
mod wire;

/// One scripted reply (builder style).
#[derive(Clone, Debug, Default)]
pub struct AnthropicReply {
    /// `thinking` text and its signature, sent first.
    thinking: Option<(String, String)>,
    /// A `redacted_thinking` block's data, after the thinking.
    redacted: Option<String>,
    text: String,
    tool_calls: Vec<(String, String, String)>,
    stop_reason: Option<String>,
    /// An error answer: status, error type, `retry-after`.
    error: Option<(u16, String, Option<u64>)>,
    /// `(cache_read, cache_write)` input tokens.
    cache: (u64, u64),
}

impl AnthropicReply {
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            ..Self::default()
        }
    }
    /// `tool_use` blocks, as `(id, name, input JSON text)`.
    pub fn tool_calls(calls: &[(&str, &str, &str)]) -> Self {
        Self {
            tool_calls: calls
                .iter()
                .map(|(i, n, a)| (i.to_string(), n.to_string(), a.to_string()))
                .collect(),
            ..Self::default()
        }
    }
    /// An error status with Anthropic's error object of `kind` (`overloaded_error`…).
    pub fn error(status: u16, kind: &str) -> Self {
        Self {
            error: Some((status, kind.to_string(), None)),
            ..Self::default()
        }
    }
    pub fn retry_after(mut self, secs: u64) -> Self {
        if let Some(e) = &mut self.error {
            e.2 = Some(secs);
        }
        self
    }
    /// A signed `thinking` block before the rest.
    pub fn thinking(mut self, text: &str, signature: &str) -> Self {
        self.thinking = Some((text.into(), signature.into()));
        self
    }
    /// A `redacted_thinking` block after the thinking.
    pub fn redacted(mut self, data: &str) -> Self {
        self.redacted = Some(data.into());
        self
    }
    pub fn with_text(mut self, text: &str) -> Self {
        self.text = text.into();
        self
    }
    pub fn stop_reason(mut self, reason: &str) -> Self {
        self.stop_reason = Some(reason.into());
        self
    }
    pub fn cache(mut self, read: u64, write: u64) -> Self {
        self.cache = (read, write);
        self
    }
}

/// One received request.
#[derive(Clone, Debug)]
pub struct Received {
    pub body: Bytes,
    pub api_key: Option<String>,
    pub version: Option<String>,
}

struct Shared {
    script: Mutex<VecDeque<AnthropicReply>>,
    default: Mutex<AnthropicReply>,
    requests: Mutex<Vec<Received>>,
    issued: Mutex<thinking::Issued>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The running fake; dropping it stops the server.
pub struct FakeAnthropic {
    addr: SocketAddr,
    shared: Arc<Shared>,
    stop: CancellationToken,
}

impl Drop for FakeAnthropic {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl FakeAnthropic {
    pub async fn start() -> std::io::Result<Self> {
        let shared = Arc::new(Shared {
            script: Mutex::default(),
            default: Mutex::new(AnthropicReply::text(
                "A reply from the fake Anthropic server.",
            )),
            requests: Mutex::default(),
            issued: Mutex::default(),
        });
        let app = Router::new()
            .route("/v1/messages", post(handle))
            .with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let stop = CancellationToken::new();
        let token = stop.clone();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(token.cancelled_owned())
                .await;
        });
        Ok(Self { addr, shared, stop })
    }

    /// The `base_url` of a model served here (the client adds `/v1/messages`).
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn push(&self, reply: AnthropicReply) {
        lock(&self.shared.script).push_back(reply);
    }

    pub fn set_default(&self, reply: AnthropicReply) {
        *lock(&self.shared.default) = reply;
    }

    pub fn received(&self) -> Vec<Received> {
        lock(&self.shared.requests).clone()
    }

    /// The request bodies, parsed.
    pub fn requests(&self) -> Vec<Value> {
        let bodies = self.received().into_iter().map(|r| r.body);
        bodies
            .map(|b| serde_json::from_slice(&b).unwrap_or(Value::Null))
            .collect()
    }

    pub fn raw_requests(&self) -> Vec<Bytes> {
        self.received().into_iter().map(|r| r.body).collect()
    }
}

async fn handle(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    let text = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    lock(&shared.requests).push(Received {
        body: body.clone(),
        api_key: text("x-api-key"),
        version: text("anthropic-version"),
    });
    let Ok(request) = serde_json::from_slice::<Value>(&body) else {
        return wire::error(400, "invalid_request_error", "not JSON", None);
    };
    if let Err(message) = lock(&shared.issued).check(&request) {
        return wire::error(400, "invalid_request_error", &message, None);
    }
    let reply = lock(&shared.script)
        .pop_front()
        .unwrap_or_else(|| lock(&shared.default).clone());
    if let Some((status, kind, retry_after)) = &reply.error {
        return wire::error(*status, kind, "scripted error", *retry_after);
    }
    let model = request.get("model").and_then(Value::as_str).unwrap_or("");
    lock(&shared.issued).record(model, &reply);
    if request.get("stream").and_then(Value::as_bool) == Some(true) {
        let mut response = wire::events(&reply, model).into_response();
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            header::HeaderValue::from_static("text/event-stream"),
        );
        return response;
    }
    (StatusCode::OK, axum::Json(wire::message(&reply, model))).into_response()
}
