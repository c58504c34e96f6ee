//! One run against a reagent service: `POST /api/chat` (or a caller tool's outputs, for BFCL's
//! entries), the run's SSE stream read to `done`, with the tools that ran and the run's counters.

use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::{json, Value as Json};

/// Where and how the tasks run: the service and what each `POST /api/chat` asks for.
#[derive(Clone, Debug)]
pub struct Target {
    /// The service's base URL, without a trailing slash.
    pub base: String,
    pub api_key: Option<String>,
    pub agent: Option<String>,
    pub model: Option<String>,
    /// `native`, `json` or `auto`; the server's choice when `None`.
    pub mode: Option<String>,
    /// The longest a task may take, its whole stream included.
    pub timeout: Duration,
}

/// What one run did, as its stream said.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    /// The run's final status (`completed`, `max_iterations`, `failed`…).
    pub status: String,
    pub answer: String,
    pub llm_calls: u64,
    pub tool_calls: u64,
    pub tokens: u64,
    /// Tools whose call ended without an error, in the order they ended.
    pub tools_ok: Vec<String>,
    /// What the first tool call that ended without an error returned (its observation), and
    /// that call as `tool(arguments)`.
    pub first_result: Option<String>,
    pub first_call: Option<String>,
    /// Calls started and not yet ended without an error: call id and `tool(arguments)`.
    started: Vec<(String, String)>,
    pub elapsed: Duration,
    pub run_id: Option<String>,
    pub conversation_id: Option<String>,
    /// A `requires_action` run's caller-tool calls: `{call_id, name, arguments}` each.
    pub required_action: Vec<Json>,
}

/// Runs `query` once; an error when the service refused it or the stream broke off before
/// `done`.
pub async fn run(http: &reqwest::Client, target: &Target, query: &str) -> Result<Outcome, String> {
    post(http, target, "/api/chat", chat_body(target, query)).await
}

/// The body of `POST /api/chat` for `query`, with the target's agent, model and mode.
pub fn chat_body(target: &Target, query: &str) -> Json {
    let mut body = json!({ "query": query });
    for (key, value) in [
        ("agent", &target.agent),
        ("model", &target.model),
        ("mode", &target.mode),
    ] {
        if let Some(v) = value {
            body[key] = json!(v);
        }
    }
    body
}

/// Posts `body` to `path` (a route that answers with a run's stream) and reads the run to
/// `done`; past the target's timeout the run is cancelled and that is the error.
pub async fn post(
    http: &reqwest::Client,
    target: &Target,
    path: &str,
    body: Json,
) -> Result<Outcome, String> {
    let started = Instant::now();
    let mut run_id = None;
    let streamed = stream(http, target, path, &body, &mut run_id);
    match tokio::time::timeout(target.timeout, streamed).await {
        Ok(Ok(mut outcome)) => {
            outcome.elapsed = started.elapsed();
            Ok(outcome)
        }
        Ok(Err(e)) => Err(e),
        Err(_) => {
            // Cancelled, so that it does not hold the model while the next tasks run.
            if let Some(id) = run_id {
                let mut req = http.post(format!("{}/api/runs/{id}/cancel", target.base));
                if let Some(key) = &target.api_key {
                    req = req.bearer_auth(key);
                }
                let _ = req.send().await;
            }
            Err(format!(
                "no `done` within {} s (--timeout-s); the run was cancelled",
                target.timeout.as_secs()
            ))
        }
    }
}

async fn stream(
    http: &reqwest::Client,
    target: &Target,
    path: &str,
    body: &Json,
    run_id: &mut Option<String>,
) -> Result<Outcome, String> {
    let mut req = http
        .post(format!("{}{path}", target.base))
        .header("Accept", "text/event-stream")
        .json(body);
    if let Some(key) = &target.api_key {
        req = req.bearer_auth(key);
    }
    let resp = req.send().await.map_err(|e| format!("request: {e}"))?;
    let status = resp.status();
    if !status.is_success() {
        let text = resp.text().await.unwrap_or_default();
        return Err(format!("HTTP {status}: {}", text.trim()));
    }
    let mut outcome = Outcome::default();
    let mut frames = Frames::default();
    let mut bytes = resp.bytes_stream();
    while let Some(chunk) = bytes.next().await {
        let chunk = chunk.map_err(|e| format!("stream: {e}"))?;
        for (event, data) in frames.push(&chunk) {
            if event == "start" {
                *run_id = data["run_id"].as_str().map(str::to_string);
                outcome.run_id.clone_from(run_id);
                outcome.conversation_id = data["conversation_id"].as_str().map(str::to_string);
            }
            if see(&mut outcome, &event, &data) {
                return Ok(outcome);
            }
        }
    }
    Err("the stream ended before `done`".into())
}

/// Takes one event into `outcome`; true at `done`.
fn see(outcome: &mut Outcome, event: &str, data: &Json) -> bool {
    let call_id = data["call_id"].as_str().unwrap_or_default().to_string();
    match event {
        "step" if data["type"] == "tool_start" && outcome.first_result.is_none() => {
            let tool = data["tool"].as_str().unwrap_or_default();
            let call = format!("{tool}({})", data["arguments"]);
            outcome.started.push((call_id, call));
            false
        }
        "step" if data["type"] == "tool_end" && data["error"] != true => {
            if let Some(tool) = data["tool"].as_str() {
                outcome.tools_ok.push(tool.to_string());
            }
            if outcome.first_result.is_none() {
                outcome.first_result = data["observation"].as_str().map(str::to_string);
                let started = outcome.started.iter().find(|(id, _)| *id == call_id);
                outcome.first_call = started.map(|(_, call)| call.clone());
                outcome.started.clear();
            }
            false
        }
        "done" => {
            let count = |v: &Json| v.as_u64().unwrap_or(0);
            outcome.status = data["status"].as_str().unwrap_or_default().to_string();
            outcome.answer = data["answer"].as_str().unwrap_or_default().to_string();
            outcome.tool_calls = count(&data["tool_calls"]);
            outcome.llm_calls = count(&data["usage"]["llm_calls"]);
            outcome.tokens = count(&data["usage"]["total_tokens"]);
            if let Some(calls) = data["required_action"]["tool_calls"].as_array() {
                outcome.required_action.clone_from(calls);
            }
            true
        }
        _ => false,
    }
}

/// An SSE decoder for reagent's own stream: `event:` and one `data:` line per frame.
#[derive(Default)]
struct Frames {
    pending: Vec<u8>,
    event: String,
    data: String,
}

impl Frames {
    /// The frames `chunk` completes, as (event, parsed data).
    fn push(&mut self, chunk: &[u8]) -> Vec<(String, Json)> {
        self.pending.extend_from_slice(chunk);
        let mut out = Vec::new();
        while let Some(at) = self.pending.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.pending.drain(..=at).collect();
            let line = String::from_utf8_lossy(&line);
            let line = line.trim_end_matches(['\n', '\r']);
            if line.is_empty() {
                let data = std::mem::take(&mut self.data);
                let event = std::mem::take(&mut self.event);
                if let Ok(json) = serde_json::from_str(&data) {
                    out.push((event, json));
                }
            } else if let Some(v) = line.strip_prefix("event:") {
                self.event = v.trim().to_string();
            } else if let Some(v) = line.strip_prefix("data:") {
                self.data.push_str(v.trim_start());
            }
        }
        out
    }
}
