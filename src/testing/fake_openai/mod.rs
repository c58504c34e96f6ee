//! [`FakeOpenAi`]: an in-process OpenAI-compatible HTTP server (axum on `127.0.0.1:0`) that speaks
//! the real wire format, for testing the real client and, later, the whole service.
//!
//! It answers `POST /v1/chat/completions` (and `/chat/completions`) with a JSON completion, or an
//! SSE stream of `chat.completion.chunk`s ending in `data: [DONE]` when the request says
//! `stream: true`. Replies are replayed from a script ([`FakeReply`], first in first out); when
//! the script is empty a default reply (a short text, settable) is used, so the fake also serves
//! as a mock provider. Every request body is recorded. Faults are injected per reply: an error
//! status with `Retry-After` and a body, a delay before responding, a stream cut mid-way, a
//! malformed chunk, an endless slow stream.
//!
//! Streams mimic OpenAI: a first chunk with `role`, then reasoning, content and tool-call deltas
//! split into pieces of [`FakeReply::chunk_chars`] characters (tool names are split in two as
//! well, to exercise tolerant clients), a chunk with `finish_reason`, then a usage chunk only when
//! the request asked for it (`stream_options.include_usage`). Fault positions count every `data:`
//! chunk, the role chunk included.
//!
//! Dropping the [`FakeOpenAi`] stops the server and ends its delayed and endless responses.
//!
//! Files: this one (the script, the server, the handler) and `wire` (the JSON completion and
//! the chunked SSE stream a reply becomes).

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use wire::{completion, error_response, json_body, sse_response};

mod thinking;
mod wire;

/// How a reply misbehaves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fault {
    /// Streams: end the body after this many chunks, without `finish_reason` or `[DONE]`.
    CutAfter(usize),
    /// Streams: after this many chunks send one unparseable chunk and end.
    MalformedAfter(usize),
    /// Streams: a content chunk every this often, forever.
    Endless(Duration),
}

/// One scripted reply (builder style). See the module docs for how it is rendered.
#[derive(Clone, Debug)]
pub struct FakeReply {
    text: String,
    tool_calls: Vec<(String, String, String)>,
    /// Gemini-style `extra_content` of each tool call (by position).
    call_extras: Vec<Option<Value>>,
    reasoning: Option<String>,
    status: Option<u16>,
    retry_after: Option<String>,
    body: Option<String>,
    delay: Duration,
    fault: Option<Fault>,
    usage: Option<(u64, u64)>,
    /// Sent as the `usage` object instead of `usage` (malformed or huge counts).
    raw_usage: Option<Value>,
    no_index: bool,
    chunk_chars: usize,
    finish_reason: Option<String>,
}

/// Token counts a reply reports unless told otherwise.
pub const FAKE_PROMPT_TOKENS: u64 = 10;
pub const FAKE_COMPLETION_TOKENS: u64 = 5;

/// What the fake answers when its script is empty (until [`FakeOpenAi::set_default`]).
pub const FAKE_DEFAULT_TEXT: &str = "This is a reply from the fake OpenAI server.";

impl FakeReply {
    fn base() -> Self {
        Self {
            text: String::new(),
            tool_calls: Vec::new(),
            call_extras: Vec::new(),
            reasoning: None,
            status: None,
            retry_after: None,
            body: None,
            delay: Duration::ZERO,
            fault: None,
            usage: Some((FAKE_PROMPT_TOKENS, FAKE_COMPLETION_TOKENS)),
            raw_usage: None,
            no_index: false,
            chunk_chars: 4,
            finish_reason: None,
        }
    }
    /// A text answer.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            ..Self::base()
        }
    }
    /// Tool calls given as `(id, name, arguments JSON text)`.
    pub fn tool_calls<I, N, A>(calls: Vec<(I, N, A)>) -> Self
    where
        I: Into<String>,
        N: Into<String>,
        A: Into<String>,
    {
        let tool_calls = calls
            .into_iter()
            .map(|(i, n, a)| (i.into(), n.into(), a.into()))
            .collect();
        Self {
            tool_calls,
            ..Self::base()
        }
    }
    /// An error status; the body defaults to an OpenAI-style error object.
    pub fn status(code: u16) -> Self {
        Self {
            status: Some(code),
            ..Self::base()
        }
    }
    /// Adds content text (e.g. next to tool calls).
    pub fn with_text(mut self, text: impl Into<String>) -> Self {
        self.text = text.into();
        self
    }
    /// `Retry-After: <secs>` on an error status.
    pub fn retry_after(mut self, secs: u64) -> Self {
        self.retry_after = Some(secs.to_string());
        self
    }
    /// A raw `Retry-After` value (e.g. an HTTP-date).
    pub fn retry_after_raw(mut self, value: impl Into<String>) -> Self {
        self.retry_after = Some(value.into());
        self
    }
    /// The body of an error status.
    pub fn body(mut self, body: impl Into<String>) -> Self {
        self.body = Some(body.into());
        self
    }
    /// Waits this long before sending anything.
    pub fn delay(mut self, ms: u64) -> Self {
        self.delay = Duration::from_millis(ms);
        self
    }
    pub fn cut_after(mut self, n_chunks: usize) -> Self {
        self.fault = Some(Fault::CutAfter(n_chunks));
        self
    }
    pub fn malformed_after(mut self, n_chunks: usize) -> Self {
        self.fault = Some(Fault::MalformedAfter(n_chunks));
        self
    }
    /// Streams a chunk every `every_ms` forever (a non-streamed request just hangs).
    pub fn endless(mut self, every_ms: u64) -> Self {
        self.fault = Some(Fault::Endless(Duration::from_millis(every_ms.max(1))));
        self
    }
    /// `reasoning_content` (streamed as deltas, or in the message).
    pub fn reasoning(mut self, reasoning: impl Into<String>) -> Self {
        self.reasoning = Some(reasoning.into());
        self
    }
    /// Gemini 3 style: each tool call carries `extra_content.google.thought_signature`,
    /// `<signature>-<n>` for call number n (streamed with the call's first delta).
    pub fn thought_signatures(mut self, signature: &str) -> Self {
        self.call_extras = (0..self.tool_calls.len())
            .map(|n| Some(thinking::signature(&format!("{signature}-{n}"))))
            .collect();
        self
    }
    pub fn usage(mut self, prompt: u64, completion: u64) -> Self {
        self.usage = Some((prompt, completion));
        self
    }
    /// This JSON as the `usage` object, whatever it holds.
    pub fn raw_usage(mut self, usage: Value) -> Self {
        self.raw_usage = Some(usage);
        self
    }
    /// No `usage` at all, even when the request asked for it.
    pub fn no_usage(mut self) -> Self {
        self.usage = None;
        self
    }
    /// Streamed tool-call deltas carry no `index`.
    pub fn no_index(mut self) -> Self {
        self.no_index = true;
        self
    }
    /// Characters per streamed delta (at least 1).
    pub fn chunk_chars(mut self, n: usize) -> Self {
        self.chunk_chars = n.max(1);
        self
    }
    pub fn finish_reason(mut self, reason: impl Into<String>) -> Self {
        self.finish_reason = Some(reason.into());
        self
    }
}

struct Shared {
    script: Mutex<VecDeque<FakeReply>>,
    default: Mutex<FakeReply>,
    /// Each request's body, `Authorization` header and HTTP version, recorded together so they
    /// stay aligned.
    requests: Mutex<Vec<(Value, Option<String>, axum::http::Version)>>,
    /// Each request's body exactly as received.
    raw: Mutex<Vec<Bytes>>,
    /// Each request's `traceparent` header.
    traceparents: Mutex<Vec<Option<String>>>,
    /// Set by [`FakeOpenAi::thinking`]: the turns to demand back, by model.
    thinking: Option<Mutex<thinking::Issued>>,
    shutdown: CancellationToken,
}

/// The largest request the fake reads.
const MAX_REQUEST_BYTES: usize = 128 * 1024 * 1024;

/// Poisoning cannot leave these simple collections inconsistent, so a poisoned lock is reused.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The running fake server. Dropping it shuts the server down.
pub struct FakeOpenAi {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl FakeOpenAi {
    /// Binds `127.0.0.1:0` and serves until dropped.
    pub async fn start() -> std::io::Result<Self> {
        Self::serve(false).await
    }

    /// A fake that behaves like a thinking model's provider: it answers 400, as DeepSeek and
    /// Gemini 3 do, when a request to the model that produced an earlier tool-call turn carries
    /// that turn without its `reasoning_content` or a call without its `extra_content`, or with
    /// either altered (see `thinking.rs`).
    pub async fn thinking() -> std::io::Result<Self> {
        Self::serve(true).await
    }

    async fn serve(thinking: bool) -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            script: Mutex::new(VecDeque::new()),
            default: Mutex::new(FakeReply::text(FAKE_DEFAULT_TEXT)),
            requests: Mutex::new(Vec::new()),
            raw: Mutex::new(Vec::new()),
            traceparents: Mutex::new(Vec::new()),
            thinking: thinking.then(Mutex::default),
            shutdown: CancellationToken::new(),
        });
        let app = Router::new()
            .route("/v1/chat/completions", post(completions))
            .route("/chat/completions", post(completions))
            // Requests carrying images are tens of megabytes (axum's default is 2 MB).
            .layer(DefaultBodyLimit::max(MAX_REQUEST_BYTES))
            .with_state(Arc::clone(&shared));
        let token = shared.shutdown.clone();
        let task = tokio::spawn(async move {
            let serve = axum::serve(listener, app).with_graceful_shutdown(token.cancelled_owned());
            if let Err(e) = serve.await {
                tracing::warn!(error = %e, "fake OpenAI server stopped");
            }
        });
        Ok(Self { addr, shared, task })
    }

    /// `http://127.0.0.1:<port>/v1`, what `LLM_BASE_URL` would be.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Queues a reply.
    pub fn push(&self, reply: FakeReply) {
        lock(&self.shared.script).push_back(reply);
    }

    /// The reply used when the script is empty.
    pub fn set_default(&self, reply: FakeReply) {
        *lock(&self.shared.default) = reply;
    }

    /// Every request body received so far (a non-JSON body is recorded as a string).
    pub fn requests(&self) -> Vec<Value> {
        lock(&self.shared.requests)
            .iter()
            .map(|(body, _, _)| body.clone())
            .collect()
    }

    /// The `Authorization` header of every request, in order.
    pub fn authorizations(&self) -> Vec<Option<String>> {
        lock(&self.shared.requests)
            .iter()
            .map(|(_, auth, _)| auth.clone())
            .collect()
    }

    /// The HTTP version of every request, in order (`LLM_HTTP2` speaks HTTP/2 here).
    pub fn http_versions(&self) -> Vec<axum::http::Version> {
        lock(&self.shared.requests)
            .iter()
            .map(|(_, _, version)| *version)
            .collect()
    }

    /// The `traceparent` header of every request, in order.
    pub fn traceparents(&self) -> Vec<Option<String>> {
        lock(&self.shared.traceparents).clone()
    }

    /// Every request body exactly as received, in order.
    pub fn raw_requests(&self) -> Vec<Bytes> {
        lock(&self.shared.raw).clone()
    }

    pub fn request_count(&self) -> usize {
        lock(&self.shared.requests).len()
    }

    /// Scripted replies not consumed yet.
    pub fn remaining(&self) -> usize {
        lock(&self.shared.script).len()
    }
}

impl Drop for FakeOpenAi {
    fn drop(&mut self) {
        self.shared.shutdown.cancel();
        self.task.abort();
    }
}

async fn completions(
    State(shared): State<Arc<Shared>>,
    version: axum::http::Version,
    headers: header::HeaderMap,
    body: Bytes,
) -> Response {
    let request: Value = serde_json::from_slice(&body)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&body).into_owned()));
    let auth = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    lock(&shared.requests).push((request.clone(), auth, version));
    lock(&shared.raw).push(body.clone());
    let traceparent = headers.get("traceparent").and_then(|v| v.to_str().ok());
    lock(&shared.traceparents).push(traceparent.map(str::to_string));
    if let Some(issued) = &shared.thinking {
        if let Err(why) = lock(issued).check(&request) {
            return error_response(400, None, Some(why));
        }
    }
    let reply = lock(&shared.script)
        .pop_front()
        .unwrap_or_else(|| lock(&shared.default).clone());
    if !reply.delay.is_zero() {
        tokio::select! {
            _ = tokio::time::sleep(reply.delay) => {}
            _ = shared.shutdown.cancelled() => return StatusCode::SERVICE_UNAVAILABLE.into_response(),
        }
    }
    if !request.is_object() {
        return error_response(400, None, Some("request body is not JSON".into()));
    }
    if let Some(code) = reply.status {
        return error_response(code, reply.retry_after.clone(), reply.body.clone());
    }
    let model = request
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("fake-model")
        .to_string();
    if let Some(issued) = &shared.thinking {
        lock(issued).record(&model, &reply);
    }
    let streamed = request.get("stream").and_then(Value::as_bool) == Some(true);
    if streamed {
        let include_usage = request
            .pointer("/stream_options/include_usage")
            .and_then(Value::as_bool)
            == Some(true);
        return sse_response(&reply, &model, include_usage, shared.shutdown.clone());
    }
    match reply.fault {
        Some(Fault::Endless(_)) => {
            shared.shutdown.cancelled().await;
            StatusCode::SERVICE_UNAVAILABLE.into_response()
        }
        Some(Fault::CutAfter(_) | Fault::MalformedAfter(_)) => json_body(
            StatusCode::OK,
            "{\"id\":\"chatcmpl-fake\",\"choices\":[{\"mess".into(),
        ),
        None => json_body(StatusCode::OK, completion(&reply, &model).to_string()),
    }
}
