//! [`MockProvider`]: a standalone OpenAI-compatible fake for load tests and benchmarks
//! (`reagent mock-provider`), cheap enough never to be the bottleneck.
//!
//! Unlike reagent's `testing::fake_openai::FakeOpenAi` (a scripted, fault-injecting fake that records every
//! request for assertions), this one keeps no per-request state beyond two counters: each reply is
//! a pure function of the request and of a [`MockConfig`], plus one draw of a seeded RNG for the
//! error rate. That makes it usable from a separate process, at thousands of requests per second.
//!
//! Behaviour (`POST /v1/chat/completions` and `/chat/completions`):
//! - with probability `error_rate` (seeded, so a run is reproducible) the reply is `503` with
//!   `Retry-After: 0`, sent at once;
//! - otherwise, after `latency` (time to first byte), a **non-streamed** request that carries
//!   `tools` gets one tool call while it holds fewer than `tool_iterations` `tool` messages since
//!   the run's query, then the final text; one **without** `tools` (JSON mode) gets
//!   `{"type":"tool_call",…}` while it holds fewer than `tool_iterations` `Observation:` user
//!   messages since the query, then `{"type":"final_answer",…}`. The query is the last user
//!   message that the engine did not write: self-reflection, cycle warnings, the completion
//!   checklist and interrupts do not restart the count, so the default configuration makes
//!   exactly `tool_iterations` tool calls per run; a request that forces one of DAG mode's
//!   functions gets a canned call to it (`structured`);
//! - any other **streamed** request (the synthesis call) gets the final text, `answer_tokens` words, one word per
//!   chunk at `tokens_per_s` (0 = as fast as possible), scheduled with `sleep_until` against the
//!   first-byte instant so the rate does not drift (with `stamp_tokens`, each word ends with
//!   `~<send time in µs since the UNIX epoch>`); then the `finish_reason` chunk, a usage chunk
//!   when `stream_options.include_usage`, and `data: [DONE]`. A streamed loop call
//!   (`synthesis = "auto"`, the default: it offers tools, or its system prompt is JSON mode's)
//!   gets the same turn as a non-streamed one, streamed, its final text (or a JSON-mode
//!   `final_answer`'s `answer`) paced word by word the same way (`streamed`).
//!
//! Usage is reported on every reply: prompt tokens are request bytes / 4 (the same heuristic as
//! the context guard); completion tokens are the words of the answer text, or bytes / 4 of what
//! was produced for tool calls and JSON-mode replies.
//!
//! With `demo` set it is the demo model of `reagent serve --demo` instead: the replies follow
//! the question (`demo`), not the counts above.
//!
//! Files: this one (configuration, server, the completions handler), `request` (what the mock
//! reads of a request and how it counts the run's tool results), `reply` (usage, errors and the
//! streamed answer), `script` (what a
//! non-streamed request gets), `streamed` (what a streamed one gets), `demo` (the demo model's
//! script), `structured` (DAG mode's forced functions), `engine` (the engine's texts the mock
//! recognises), `serve` (the accept loop: HTTP/1.1 and h2c).
//!
//! A crate of its own so that the load generator gets it without compiling the server.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use reply::{error, stream_answer, usage};
pub use reply::{token_stamps, unix_micros};
use request::{results_since_query, MockRequest};
use script::reply_message;

pub mod demo;
pub mod engine;
mod reply;
mod request;
mod script;
mod serve;
mod streamed;
mod structured;

/// The arguments of the default tool call; `<i>` becomes the number of tool results so far.
pub const DEFAULT_TOOL_ARGS: &str = r#"{"expression":"<i>+1"}"#;

/// Words the answer cycles through (token `k` is `WORDS[k % len]`, space-separated).
const WORDS: [&str; 8] = [
    "mock", "answer", "token", "stream", "steady", "reply", "agent", "done",
];

/// Request bodies above this are refused (413); long agent histories stay well below it.
const MAX_BODY_BYTES: usize = 32 * 1024 * 1024;

/// What the mock provider does. `Default` is an instant, error-free provider answering a
/// 16-word text with no tool calls.
#[derive(Clone, Debug)]
pub struct MockConfig {
    /// Where to listen (`127.0.0.1:0` picks a free port).
    pub bind: SocketAddr,
    /// Delay before the first byte of every successful reply.
    pub latency: Duration,
    /// When set, replaces `latency` for a non-streamed request that holds no tool result yet
    /// (the first loop call of a run): a load generator can then attach to the run's stream
    /// before zero-latency iterations start, and time each iteration as it happens.
    pub first_call_latency: Option<Duration>,
    /// Streamed words per second; 0 = as fast as possible.
    pub tokens_per_s: f64,
    /// Words in the answer text.
    pub answer_tokens: usize,
    /// Tool calls (native) or `tool_call` actions (JSON mode) before the final answer.
    pub tool_iterations: usize,
    /// Name of the scripted tool.
    pub tool: String,
    /// Arguments JSON of the scripted tool; `<i>` is replaced by the iteration index.
    pub tool_args: String,
    /// Share of requests answered with 503, in 0..=1.
    pub error_rate: f64,
    /// Seed of the error-rate RNG.
    pub seed: u64,
    /// Streamed words carry their send time: `word~<µs since the UNIX epoch>` (the wall clock
    /// when the chunk is written), so a client on the same host can measure chunk → SSE latency.
    pub stamp_tokens: bool,
    /// Answer like the demo model of `reagent serve --demo` (`demo`): read the question, call
    /// the calculator or the clock for it, answer from the results; the fields above that
    /// script the tool calls and the answer are then unused.
    pub demo: bool,
}

impl Default for MockConfig {
    fn default() -> Self {
        Self {
            bind: SocketAddr::from(([127, 0, 0, 1], 0)),
            latency: Duration::ZERO,
            first_call_latency: None,
            tokens_per_s: 0.0,
            answer_tokens: 16,
            tool_iterations: 0,
            tool: "calculator".into(),
            tool_args: DEFAULT_TOOL_ARGS.into(),
            error_rate: 0.0,
            seed: 0,
            stamp_tokens: false,
            demo: false,
        }
    }
}

/// Invalid [`MockConfig`] values, reported before binding.
#[derive(Debug, thiserror::Error)]
pub enum MockConfigError {
    #[error("error rate must be within 0..=1, got {0}")]
    ErrorRate(f64),
    #[error("tokens per second must be finite and >= 0, got {0}")]
    TokensPerS(f64),
    #[error("tool arguments are not a JSON object once <i> is replaced: {0}")]
    ToolArgs(String),
}

impl MockConfig {
    /// The demo model on a free loopback port: a short think before each loop reply and the
    /// answer streamed at a reading pace, so the UI shows each stage of a run.
    pub fn demo() -> Self {
        Self {
            latency: Duration::from_millis(300),
            tokens_per_s: 40.0,
            demo: true,
            ..Self::default()
        }
    }

    /// Checks the values a CLI user can get wrong.
    pub fn validate(&self) -> Result<(), MockConfigError> {
        if !(0.0..=1.0).contains(&self.error_rate) {
            return Err(MockConfigError::ErrorRate(self.error_rate));
        }
        if !self.tokens_per_s.is_finite() || self.tokens_per_s < 0.0 {
            return Err(MockConfigError::TokensPerS(self.tokens_per_s));
        }
        match serde_json::from_str::<Value>(&self.tool_args.replace("<i>", "0")) {
            Ok(Value::Object(_)) => Ok(()),
            Ok(other) => Err(MockConfigError::ToolArgs(other.to_string())),
            Err(e) => Err(MockConfigError::ToolArgs(e.to_string())),
        }
    }

    /// The answer text: `answer_tokens` words separated by single spaces. The streamed deltas
    /// concatenate to exactly this.
    pub fn answer_text(&self) -> String {
        answer_tokens(self.answer_tokens).concat()
    }
}

/// `text` as streamed tokens: each word with the spaces before it.
fn words(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut current = String::new();
    for c in text.chars() {
        if !c.is_whitespace()
            && current.ends_with(char::is_whitespace)
            && !current.trim().is_empty()
        {
            out.push(std::mem::take(&mut current));
        }
        current.push(c);
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// Tokens as the JSON string literals the stream writes.
fn literals(tokens: &[String]) -> Arc<[String]> {
    tokens.iter().map(|t| json!(t).to_string()).collect()
}

/// Token `k` of the answer, with its leading space (none for the first).
fn answer_tokens(n: usize) -> Vec<String> {
    (0..n)
        .map(|k| {
            let word = WORDS[k % WORDS.len()];
            if k == 0 {
                word.to_string()
            } else {
                format!(" {word}")
            }
        })
        .collect()
}

/// Everything handlers share; immutable except the RNG and counters.
struct Shared {
    cfg: MockConfig,
    /// The answer text, and each token as a JSON string literal (escaped once, at start).
    answer: String,
    token_literals: Arc<[String]>,
    rng: Mutex<StdRng>,
    requests: AtomicU64,
    errors: AtomicU64,
    shutdown: CancellationToken,
}

/// The running mock provider. Dropping it stops the server and ends its streams.
pub struct MockProvider {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl MockProvider {
    /// Validates `cfg`, binds `cfg.bind` and serves until dropped.
    pub async fn start(cfg: MockConfig) -> std::io::Result<MockProvider> {
        cfg.validate()
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
        // Thousands of the server's pooled connections can open at once.
        let listener = serve::listen(cfg.bind)?;
        let addr = listener.local_addr()?;
        let tokens = answer_tokens(cfg.answer_tokens);
        let shared = Arc::new(Shared {
            answer: tokens.concat(),
            token_literals: literals(&tokens),
            rng: Mutex::new(StdRng::seed_from_u64(cfg.seed)),
            requests: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            shutdown: CancellationToken::new(),
            cfg,
        });
        let app = Router::new()
            .route("/v1/chat/completions", post(completions))
            .route("/chat/completions", post(completions))
            .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
            .with_state(Arc::clone(&shared));
        let token = shared.shutdown.clone();
        let task = tokio::spawn(serve::serve(listener, app, token.cancelled_owned()));
        Ok(MockProvider { addr, shared, task })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://ADDR/v1`, what `LLM_BASE_URL` would be.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Requests received so far (errors included).
    pub fn request_count(&self) -> u64 {
        self.shared.requests.load(Ordering::Relaxed)
    }

    /// Requests answered with the injected 503.
    pub fn error_count(&self) -> u64 {
        self.shared.errors.load(Ordering::Relaxed)
    }

    /// Stops accepting, ends in-flight streams and waits for the server task.
    pub async fn shutdown(mut self) {
        self.shared.shutdown.cancel();
        // Replace the handle so that `Drop` (which aborts) has nothing left to abort.
        let task = std::mem::replace(&mut self.task, tokio::spawn(async {}));
        let _ = task.await;
    }
}

impl Drop for MockProvider {
    fn drop(&mut self) {
        self.shared.shutdown.cancel();
        self.task.abort();
    }
}

async fn completions(State(shared): State<Arc<Shared>>, body: Bytes) -> Response {
    shared.requests.fetch_add(1, Ordering::Relaxed);
    let Ok(request) = serde_json::from_slice::<MockRequest>(&body) else {
        return error(
            StatusCode::BAD_REQUEST,
            "request body is not a chat request",
        );
    };
    if let Some(refused) = injected_error(&shared) {
        return refused;
    }
    let cfg = &shared.cfg;
    let first_byte = Instant::now() + cfg.latency;
    let prompt_tokens = (body.len() / 4) as u64;
    let model = json!(request.model.as_deref().unwrap_or("mock-model")).to_string();
    let streamed = request.stream == Some(true);
    let native = request.tools.as_ref().is_some_and(|t| !t.is_empty());
    if streamed && !streamed::is_loop_call(&request, native) {
        let plan = streamed::synthesis(&shared, &request);
        let include_usage = include_usage(&request);
        return stream_answer(
            shared,
            plan,
            model,
            first_byte,
            prompt_tokens,
            include_usage,
        );
    }
    let done = results_since_query(&request.messages, native);
    let first_byte = match cfg.first_call_latency {
        Some(first) if done == 0 => first_byte - cfg.latency + first,
        _ => first_byte,
    };
    if streamed {
        let plan = streamed::loop_turn(&shared, &request, native, done);
        let include_usage = include_usage(&request);
        return stream_answer(
            shared,
            plan,
            model,
            first_byte,
            prompt_tokens,
            include_usage,
        );
    }
    if first_byte > Instant::now() {
        tokio::select! {
            () = tokio::time::sleep_until(first_byte) => {}
            () = shared.shutdown.cancelled() => return error(StatusCode::SERVICE_UNAVAILABLE, "shutting down"),
        }
    }
    let (message, finish, completion_tokens) = reply_message(&shared, &request, native, done);
    let reply = format!(
        r#"{{"id":"chatcmpl-mock","object":"chat.completion","created":0,"model":{model},"choices":[{{"index":0,"message":{message},"finish_reason":"{finish}"}}],"usage":{usage}}}"#,
        usage = usage(prompt_tokens, completion_tokens),
    );
    ([(header::CONTENT_TYPE, "application/json")], reply).into_response()
}

fn include_usage(request: &MockRequest) -> bool {
    request
        .stream_options
        .as_ref()
        .and_then(|o| o.include_usage)
        .unwrap_or(false)
}

/// The 503 the error rate draws, if this request gets one.
fn injected_error(shared: &Shared) -> Option<Response> {
    if shared.cfg.error_rate <= 0.0 {
        return None;
    }
    // A poisoned RNG is still a valid RNG.
    let draw: f64 = shared
        .rng
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .random();
    if draw >= shared.cfg.error_rate {
        return None;
    }
    shared.errors.fetch_add(1, Ordering::Relaxed);
    let mut r = error(StatusCode::SERVICE_UNAVAILABLE, "mock provider overloaded");
    r.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("0"));
    Some(r)
}
