//! One call of a remote agent: `SendStreamingMessage` (or `SendMessage` when the card says
//! the agent does not stream), each status update's text reported as progress, the artifacts'
//! text as the answer. A task that fails, is canceled, or wants input or authentication is an
//! error naming the remote's reason. While the remote task runs, a [`CancelOnDrop`] guard is
//! armed: a call dropped by the run's cancellation or by its timeout sends `CancelTask`.

use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{ACCEPT, CONTENT_TYPE};
use serde_json::Value;

use super::card::Endpoint;
use super::wire::{self, Method, Reply, TaskState, Update, Version};
use crate::llm::sse::SseData;
use crate::net::{read_prefix, MAX_ERROR_BODY_BYTES};
use crate::tools::http_request::{describe, read_capped};
use crate::tools::{Progress, ToolError};

/// Most bytes of one remote call's replies (a stream's events together).
const MAX_REPLY_BYTES: usize = 8 * 1024 * 1024;
/// Longest wait for the remote to take a `CancelTask`.
const CANCEL_TIMEOUT: Duration = Duration::from_secs(10);
/// How often a task that a non-streaming send left running is asked for again.
const POLL_INTERVAL: Duration = Duration::from_millis(500);
/// Characters of an error body quoted.
const EXCERPT_CHARS: usize = 300;
/// Most status updates of one call shown as steps: a chatty remote must not flood the run's log.
const MAX_NOTES: usize = 200;

/// Why a call failed: the remote's JSON-RPC error (which may call for a fallback), no
/// connection (the card is read again next time), or another.
pub enum Failure {
    Rpc { code: i64, message: String },
    Unreachable(ToolError),
    Tool(ToolError),
}

impl From<ToolError> for Failure {
    fn from(e: ToolError) -> Self {
        Failure::Tool(e)
    }
}

/// Sends `CancelTask` for the remote task when dropped while armed.
struct CancelOnDrop {
    endpoint: Arc<Endpoint>,
    task: Option<String>,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let (Some(task), Ok(runtime)) = (self.task.take(), tokio::runtime::Handle::try_current())
        else {
            return;
        };
        let endpoint = self.endpoint.clone();
        // Bounded by CANCEL_TIMEOUT; the call it belongs to is already gone.
        runtime.spawn(async move {
            let body = wire::for_task(endpoint.version, Method::Cancel, &task);
            let sent = tokio::time::timeout(CANCEL_TIMEOUT, post(&endpoint, &body, false)).await;
            match sent {
                Ok(Ok(_)) => tracing::info!(task = %task, "cancelled the remote A2A task"),
                _ => tracing::warn!(task = %task, "could not cancel the remote A2A task"),
            }
        });
    }
}

/// What a call has seen of the remote task so far.
pub struct Call<'a> {
    name: &'a str,
    progress: &'a Progress,
    guard: CancelOnDrop,
    artifacts: Vec<wire::Artifact>,
    last_note: Option<String>,
    notes: usize,
}

impl<'a> Call<'a> {
    pub fn new(name: &'a str, endpoint: &Arc<Endpoint>, progress: &'a Progress) -> Self {
        Self {
            name,
            progress,
            guard: CancelOnDrop {
                endpoint: endpoint.clone(),
                task: None,
            },
            artifacts: Vec::new(),
            last_note: None,
            notes: 0,
        }
    }

    /// The answer: the artifacts' text, else what the remote said last.
    fn answer(&self) -> String {
        let texts: Vec<&str> = self
            .artifacts
            .iter()
            .map(|a| a.text.as_str())
            .filter(|t| !t.trim().is_empty())
            .collect();
        match (texts.is_empty(), &self.last_note) {
            (false, _) => texts.join("\n\n"),
            (true, Some(note)) => note.clone(),
            (true, None) => format!("(the A2A agent '{}' finished without an answer)", self.name),
        }
    }

    /// Reports a status text unless it repeats the last one, up to [`MAX_NOTES`].
    fn report(&mut self, note: Option<String>) {
        let Some(note) = note else { return };
        if self.last_note.as_ref() != Some(&note) {
            self.notes += 1;
            match self.notes.cmp(&MAX_NOTES) {
                std::cmp::Ordering::Less => self.progress.report(note.clone()),
                std::cmp::Ordering::Equal => self
                    .progress
                    .report(format!("(further updates of '{}' not shown)", self.name)),
                std::cmp::Ordering::Greater => {}
            }
        }
        self.last_note = Some(note);
    }

    /// Takes one update; the call's result once the task has ended or stopped for input.
    pub fn apply(&mut self, update: Update) -> Option<Result<String, ToolError>> {
        match update {
            Update::Message { text } => {
                self.guard.task = None;
                Some(Ok(text))
            }
            Update::Artifact { artifact, append } => {
                match self.artifacts.last_mut() {
                    Some(last) if append && last.id == artifact.id => {
                        last.text.push_str(&artifact.text)
                    }
                    _ => self.artifacts.push(artifact),
                }
                None
            }
            Update::Task {
                id,
                state,
                note,
                artifacts,
                history,
            } => {
                self.guard.task.get_or_insert(id);
                if !artifacts.is_empty() {
                    self.artifacts = artifacts;
                }
                for text in history {
                    self.report(Some(text));
                }
                self.status(state, note)
            }
            Update::Status {
                task_id,
                state,
                note,
            } => {
                if !task_id.is_empty() {
                    self.guard.task.get_or_insert(task_id);
                }
                self.status(state, note)
            }
        }
    }

    fn status(
        &mut self,
        state: TaskState,
        note: Option<String>,
    ) -> Option<Result<String, ToolError>> {
        let name = self.name;
        let reason =
            |note: &Option<String>| note.clone().unwrap_or_else(|| "no reason given".into());
        let ended = |s: &mut Self, r| {
            s.guard.task = None;
            Some(r)
        };
        match state {
            TaskState::Completed => {
                if self.artifacts.is_empty() {
                    self.last_note = note.or(self.last_note.take());
                }
                let answer = self.answer();
                ended(self, Ok(answer))
            }
            TaskState::Failed | TaskState::Rejected => {
                let e = format!("the A2A agent '{name}' failed: {}", reason(&note));
                ended(self, Err(ToolError::Failed(e)))
            }
            TaskState::Canceled => {
                let e = format!(
                    "the A2A agent '{name}' canceled the task: {}",
                    reason(&note)
                );
                ended(self, Err(ToolError::Failed(e)))
            }
            // The task waits for an answer reagent will not give (each call is a new task):
            // the guard cancels it when the call returns.
            TaskState::InputRequired => Some(Err(ToolError::Failed(format!(
                "the A2A agent '{name}' needs more input: {}. Call it again with a message \
                 that includes what it asks for.",
                reason(&note)
            )))),
            TaskState::AuthRequired => Some(Err(ToolError::Failed(format!(
                "the A2A agent '{name}' requires authentication: {}",
                reason(&note)
            )))),
            TaskState::Submitted | TaskState::Working | TaskState::Other(_) => {
                self.report(note);
                None
            }
        }
    }

    /// The result of a stream that ended without a final state.
    fn cut_short(&mut self) -> Result<String, ToolError> {
        if !self.artifacts.is_empty() {
            self.guard.task = None;
            return Ok(self.answer());
        }
        Err(ToolError::Failed(format!(
            "the A2A agent '{}' ended its stream before its task finished",
            self.name
        )))
    }

    /// `SendStreamingMessage`: reads the events until the task ends.
    pub async fn stream(&mut self, ep: &Endpoint, text: &str) -> Result<String, Failure> {
        let body = wire::send(ep.version, Method::Stream, text);
        let mut response = post(ep, &body, true).await?;
        if !is_event_stream(&response) {
            let update = whole_reply(self.name, response).await?;
            return Ok(self.apply(update).unwrap_or_else(|| self.cut_short())?);
        }
        let mut sse = SseData::new();
        let mut read = 0usize;
        loop {
            while let Some(data) = sse.next_data() {
                let data = data.map_err(|_| self.bad("an event that is not UTF-8".into()))?;
                let update = self.read_reply(&data)?;
                if let Some(result) = self.apply(update) {
                    return Ok(result?);
                }
            }
            if sse.is_finished() {
                return Ok(self.cut_short()?);
            }
            match response.chunk().await {
                Ok(Some(chunk)) => {
                    read += chunk.len();
                    if read > MAX_REPLY_BYTES {
                        return Err(self
                            .bad(format!("a stream over {MAX_REPLY_BYTES} bytes"))
                            .into());
                    }
                    sse.push(&chunk);
                }
                Ok(None) => sse.finish(),
                Err(e) => return Err(self.lost(&e).into()),
            }
        }
    }

    /// `SendMessage`, then `GetTask` while the task runs.
    pub async fn send(&mut self, ep: &Endpoint, text: &str) -> Result<String, Failure> {
        let body = wire::send(ep.version, Method::Send, text);
        let update = whole_reply(self.name, post(ep, &body, false).await?).await?;
        if let Some(result) = self.apply(update) {
            return Ok(result?);
        }
        loop {
            let Some(task) = self.guard.task.clone() else {
                return Ok(self.cut_short()?);
            };
            tokio::time::sleep(POLL_INTERVAL).await;
            let body = wire::for_task(ep.version, Method::Get, &task);
            let update = whole_reply(self.name, post(ep, &body, false).await?).await?;
            if let Some(result) = self.apply(update) {
                return Ok(result?);
            }
        }
    }

    fn read_reply(&self, data: &str) -> Result<Update, Failure> {
        match wire::reply(data).map_err(|e| self.bad(e))? {
            Reply::Result(update) => Ok(update),
            Reply::Error { code, message } => Err(Failure::Rpc { code, message }),
        }
    }

    fn bad(&self, what: String) -> ToolError {
        ToolError::Failed(format!("the A2A agent '{}' sent {what}", self.name))
    }

    fn lost(&self, e: &reqwest::Error) -> ToolError {
        ToolError::Failed(format!(
            "the connection to the A2A agent '{}' broke: {}",
            self.name,
            describe(e)
        ))
    }
}

fn is_event_stream(response: &reqwest::Response) -> bool {
    response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().starts_with("text/event-stream"))
}

/// POSTs one JSON-RPC request; a status other than 2xx is an error quoting the body's start.
pub async fn post(ep: &Endpoint, body: &Value, stream: bool) -> Result<reqwest::Response, Failure> {
    let accept = if stream {
        "text/event-stream"
    } else {
        "application/json"
    };
    let mut request = ep
        .client
        .post(ep.url.clone())
        .headers(ep.headers.clone())
        .header(ACCEPT, accept)
        .json(body);
    if ep.version == Version::V1 {
        request = request.header("A2A-Version", "1.0");
    }
    let response = crate::telemetry::propagation::inject(request)
        .send()
        .await
        .map_err(|e| {
            let e = format!("cannot reach the A2A agent at {}: {}", ep.url, describe(&e));
            Failure::Unreachable(ToolError::Failed(e))
        })?;
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    let body = read_prefix(response, MAX_ERROR_BODY_BYTES).await;
    let text = String::from_utf8_lossy(&body);
    let excerpt: String = text.trim().chars().take(EXCERPT_CHARS).collect();
    Err(Failure::Tool(ToolError::Failed(format!(
        "the A2A agent at {} answered HTTP {}: {excerpt}",
        ep.url,
        status.as_u16()
    ))))
}

/// A whole JSON-RPC reply body, read into its update (or the remote's error).
async fn whole_reply(name: &str, response: reqwest::Response) -> Result<Update, Failure> {
    let (body, cut) = read_capped(response, MAX_REPLY_BYTES).await.map_err(|e| {
        ToolError::Failed(format!(
            "the A2A agent '{name}' reply broke: {}",
            describe(&e)
        ))
    })?;
    let bad = |what: String| ToolError::Failed(format!("the A2A agent '{name}' sent {what}"));
    if cut {
        return Err(bad(format!("a reply over {MAX_REPLY_BYTES} bytes")).into());
    }
    match wire::reply(&String::from_utf8_lossy(&body)).map_err(bad)? {
        Reply::Result(update) => Ok(update),
        Reply::Error { code, message } => Err(Failure::Rpc { code, message }),
    }
}
