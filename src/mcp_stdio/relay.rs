//! One message from the stdio client to reagent's `/mcp`, and every message of the reply back.
//! The session id reagent gives at `initialize` and the protocol version it agreed are sent on
//! every later message, as the streamable HTTP transport asks; a reply that never comes (no
//! connection, an error status, a stream cut short) becomes the request's JSON-RPC error.

use std::sync::Mutex;
use std::time::Duration;

use futures::StreamExt;
use reqwest::header::{HeaderMap, HeaderValue, ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use reqwest::{Response, StatusCode, Url};
use serde_json::{json, Value};
use tokio::sync::mpsc::UnboundedSender;

use crate::llm::SseData;

const SESSION_HEADER: &str = "mcp-session-id";
const VERSION_HEADER: &str = "mcp-protocol-version";
const PARSE_ERROR: i64 = -32700;
/// JSON-RPC's range for implementation errors: here, reagent did not answer the request.
const NO_REPLY: i64 = -32000;
/// A reply body quoted in an error, at most.
const QUOTED: usize = 300;

/// The HTTP side of the bridge: where reagent is, the key, and the session it gave.
pub struct Relay {
    http: reqwest::Client,
    endpoint: Url,
    key: Option<String>,
    key_env: String,
    session: Mutex<Option<HeaderValue>>,
    version: Mutex<Option<HeaderValue>>,
}

/// The reply messages written so far, and whether the request's own response was one.
struct Written<'a> {
    out: &'a UnboundedSender<String>,
    id: Option<&'a Value>,
    answered: bool,
}

impl Written<'_> {
    fn send(&mut self, mut message: Value) {
        let ours = self.id.is_some_and(|id| {
            let response = message.get("result").is_some() || message.get("error").is_some();
            // An error reagent could not tie to a request (a bad header) is this request's.
            if response && message["id"].is_null() {
                message["id"] = id.clone();
            }
            response && message["id"] == *id
        });
        self.answered |= ours;
        let line = message.to_string();
        tracing::debug!(%line, "to the client");
        let _ = self.out.send(line);
    }
}

impl Relay {
    /// A relay to `url`'s `/mcp`; an error when `url` is not an http(s) URL.
    pub fn new(url: &str, key: Option<String>, key_env: &str) -> anyhow::Result<Self> {
        let trimmed = url.trim_end_matches('/');
        let full = match trimmed.ends_with("/mcp") {
            true => trimmed.to_string(),
            false => format!("{trimmed}/mcp"),
        };
        let endpoint = Url::parse(&full)
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https"))
            .ok_or_else(|| anyhow::anyhow!("--url {url:?} is not an http(s) URL"))?;
        // No overall timeout: a tool call lasts as long as its run.
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .build()?;
        Ok(Self {
            http,
            endpoint,
            key,
            key_env: key_env.to_string(),
            session: Mutex::new(None),
            version: Mutex::new(None),
        })
    }

    /// Relays one line of the client: its reply messages go to `out`.
    pub async fn forward(self: std::sync::Arc<Self>, line: Vec<u8>, out: UnboundedSender<String>) {
        let message: Value = match serde_json::from_slice(&line) {
            Ok(m) => m,
            Err(e) => {
                let _ = out.send(error(
                    &Value::Null,
                    PARSE_ERROR,
                    &format!("parse error: {e}"),
                ));
                return;
            }
        };
        // A request has a method and an id; anything else (a notification, a response to the
        // server) gets no reply of its own.
        let id = match (&message["method"], &message["id"]) {
            (Value::String(_), id @ (Value::String(_) | Value::Number(_))) => Some(id),
            _ => None,
        };
        let method = message["method"].as_str().unwrap_or_default();
        let mut written = Written {
            out: &out,
            id,
            answered: false,
        };
        let failure = match self.post(line).await {
            Ok(reply) => self.reply(reply, method, &mut written).await.err(),
            Err(e) => Some(format!(
                "reagent at {} cannot be reached: {}",
                self.endpoint,
                causes(&e)
            )),
        };
        match (id, written.answered, failure) {
            (Some(id), false, why) => {
                let why = why.unwrap_or_else(|| "reagent's reply held no response".into());
                tracing::warn!(%method, "{why}");
                let _ = out.send(error(id, NO_REPLY, &why));
            }
            (_, _, Some(why)) => tracing::warn!(%method, "{why}"),
            _ => {}
        }
    }

    async fn post(&self, body: Vec<u8>) -> reqwest::Result<Response> {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let accept = HeaderValue::from_static("application/json, text/event-stream");
        headers.insert(ACCEPT, accept);
        if let Some(value) = self.bearer() {
            headers.insert(AUTHORIZATION, value);
        }
        if let Some(session) = lock(&self.session) {
            headers.insert(SESSION_HEADER, session);
        }
        if let Some(version) = lock(&self.version) {
            headers.insert(VERSION_HEADER, version);
        }
        let request = self.http.post(self.endpoint.clone()).headers(headers);
        request.body(body).send().await
    }

    fn bearer(&self) -> Option<HeaderValue> {
        let key = self.key.as_ref()?;
        let mut value = HeaderValue::from_str(&format!("Bearer {key}")).ok()?;
        value.set_sensitive(true);
        Some(value)
    }

    /// Writes the messages of `reply`; why it did not answer, when it did not.
    async fn reply(
        &self,
        reply: Response,
        method: &str,
        written: &mut Written<'_>,
    ) -> Result<(), String> {
        let status = reply.status();
        if let Some(session) = reply.headers().get(SESSION_HEADER) {
            *self.session.lock().unwrap_or_else(|e| e.into_inner()) = Some(session.clone());
        }
        let streamed = reply
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|t| t.starts_with("text/event-stream"));
        if status == StatusCode::ACCEPTED {
            return Ok(());
        }
        if streamed && status.is_success() {
            return self.stream(reply, method, written).await;
        }
        let body = reply
            .bytes()
            .await
            .map_err(|e| format!("reading reagent's reply: {e}"))?;
        match serde_json::from_slice::<Value>(&body) {
            Ok(message) if message.get("jsonrpc").is_some() => {
                self.saw(method, &message);
                written.send(message);
                Ok(())
            }
            _ => Err(self.refusal(status, &body)),
        }
    }

    /// The sentence of a reply that is not JSON-RPC (the key layer's 401, a proxy's 502).
    fn refusal(&self, status: StatusCode, body: &[u8]) -> String {
        let text = String::from_utf8_lossy(body);
        let quoted: String = text.chars().take(QUOTED).collect();
        match status {
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => format!(
                "reagent refused the call (HTTP {status}): set {} to one of its API keys ({quoted})",
                self.key_env
            ),
            _ => format!("reagent answered HTTP {status}: {quoted}"),
        }
    }

    /// Writes each message of an event stream as it arrives.
    async fn stream(
        &self,
        reply: Response,
        method: &str,
        written: &mut Written<'_>,
    ) -> Result<(), String> {
        let mut body = reply.bytes_stream();
        let mut events = SseData::new();
        loop {
            while let Some(data) = events.next_data() {
                let data = data.map_err(|_| "reagent sent an event that is not UTF-8")?;
                match serde_json::from_str::<Value>(&data) {
                    Ok(message) => {
                        self.saw(method, &message);
                        written.send(message);
                    }
                    Err(e) => tracing::warn!("reagent sent an event that is not JSON: {e}"),
                }
            }
            if events.is_finished() {
                return Ok(());
            }
            match body.next().await {
                Some(Ok(chunk)) => events.push(&chunk),
                Some(Err(e)) => {
                    return Err(format!("reagent's reply was cut short: {}", causes(&e)))
                }
                None => events.finish(),
            }
        }
    }

    /// Keeps the protocol version of an `initialize` result for the messages after it.
    fn saw(&self, method: &str, message: &Value) {
        let agreed = message["result"]["protocolVersion"].as_str();
        if let (true, Some(version)) = (method == "initialize", agreed) {
            if let Ok(value) = HeaderValue::from_str(version) {
                *self.version.lock().unwrap_or_else(|e| e.into_inner()) = Some(value);
            }
        }
    }

    /// Tells reagent the session ended (it keeps nothing under it today; the transport asks
    /// clients to say so). Best effort, briefly: the client is already gone.
    pub async fn end_session(&self) {
        let Some(session) = lock(&self.session) else {
            return;
        };
        let mut request = self
            .http
            .delete(self.endpoint.clone())
            .header(SESSION_HEADER, session)
            .timeout(Duration::from_secs(2));
        if let Some(value) = self.bearer() {
            request = request.header(AUTHORIZATION, value);
        }
        if let Err(e) = request.send().await {
            tracing::debug!("ending the MCP session: {e}");
        }
    }
}

/// An error with its causes: reqwest's own sentence hides why ("connection refused").
fn causes(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}

fn lock(slot: &Mutex<Option<HeaderValue>>) -> Option<HeaderValue> {
    slot.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// An error response's line.
fn error(id: &Value, code: i64, message: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}).to_string()
}
