//! `tools/call`: an agent's run through the session layer, followed through its events like
//! every other protocol's stream ([`crate::server::event_body`]): a `notifications/progress`
//! per step when the client sent a progress token, then the result — the answer as text and
//! `structuredContent {answer, run_id, conversation_id, status}`, `isError` on a failed run.

use std::sync::Arc;

use futures::StreamExt;
use serde_json::{json, Value};
use uuid::Uuid;

use super::names::tool_names;
use super::rpc::{self, data};
use super::Calls;
use crate::agent::events::{RunOutcome, StepEvent};
use crate::config::AgentSpec;
use crate::domain::RunStatus;
use crate::runs::session::{Ask, Thread};
use crate::runs::{title_after, LiveRun, LoggedEvent};
use crate::server::event_body::Encoder;
use crate::server::state::AppState;
use crate::server::ApiError;
use crate::store::NewConversation;

/// The arguments of a call, checked.
pub struct CallArgs {
    pub agent: String,
    pub query: String,
    pub conversation: Option<Uuid>,
    pub progress_token: Option<Value>,
}

impl CallArgs {
    /// Reads `params`; the sentence of an invalid-params error when they are not a call of a
    /// visible agent.
    pub fn parse(agents: &[Arc<AgentSpec>], params: &Value) -> Result<Self, String> {
        let name = params["name"].as_str().ok_or("`name` is required")?;
        let agent = tool_names(agents)
            .iter()
            .position(|tool| !tool.is_empty() && tool == name)
            .map(|i| &agents[i])
            .ok_or_else(|| format!("unknown tool `{name}`"))?;
        let args = &params["arguments"];
        let query = args["query"]
            .as_str()
            .filter(|q| !q.trim().is_empty())
            .ok_or("`arguments.query` must be a non-empty string")?;
        let conversation = match &args["conversation_id"] {
            Value::Null => None,
            Value::String(s) => {
                Some(Uuid::parse_str(s).map_err(|_| "`arguments.conversation_id` is not a UUID")?)
            }
            _ => return Err("`arguments.conversation_id` must be a string".into()),
        };
        let progress_token = params["_meta"]["progressToken"].clone();
        Ok(Self {
            agent: agent.name.clone(),
            query: query.to_string(),
            conversation,
            progress_token: (!progress_token.is_null()).then_some(progress_token),
        })
    }
}

/// Starts the run a call asks for; the tool result of a start that failed.
pub async fn start(state: &AppState, owner: &str, args: &CallArgs) -> Result<Arc<LiveRun>, Value> {
    let (thread, agent) = match args.conversation {
        Some(id) => (Thread::Conversation(id), Some(args.agent.clone())),
        None => {
            let new = NewConversation {
                title: Some(title_after(&args.query)),
                agent: Some(args.agent.clone()),
                ..NewConversation::default()
            };
            (Thread::New(new), None)
        }
    };
    let ask = Ask {
        query: args.query.clone(),
        agent,
        ..Ask::default()
    };
    match state.runs.attach(owner, thread, ask).await {
        Ok(started) => Ok(started.live),
        Err(e) => {
            let message = match ApiError::from(e) {
                ApiError::Internal(detail) => {
                    tracing::error!(error = %detail, "an MCP tool call failed to start");
                    "internal server error".to_string()
                }
                other => other.to_string(),
            };
            Err(tool_error(&message, None))
        }
    }
}

/// A tool result that is an error, with the run's ids when there is a run.
fn tool_error(message: &str, run: Option<(&LiveRun, RunStatus)>) -> Value {
    let mut result = json!({"content": [{"type": "text", "text": message}], "isError": true});
    if let Some((live, status)) = run {
        result["structuredContent"] = structured("", live, status);
    }
    result
}

fn structured(answer: &str, live: &LiveRun, status: RunStatus) -> Value {
    json!({"answer": answer, "run_id": live.id, "conversation_id": live.conversation_id,
           "status": status})
}

/// The tool's result for a run's outcome.
fn outcome_result(live: &LiveRun, outcome: RunOutcome) -> Value {
    match outcome.status {
        RunStatus::Failed => {
            let text = outcome.error.unwrap_or(outcome.answer);
            tool_error(&text, Some((live, RunStatus::Failed)))
        }
        RunStatus::Cancelled => tool_error("the run was cancelled", Some((live, outcome.status))),
        status => json!({
            "content": [{"type": "text", "text": outcome.answer}],
            "structuredContent": structured(&outcome.answer, live, status),
            "isError": false,
        }),
    }
}

/// One call in flight: forgotten (and its run cancelled, when the client went away before
/// the end) when dropped.
pub struct InFlight {
    pub calls: Arc<Calls>,
    pub key: (String, String, String),
    pub live: Arc<LiveRun>,
    pub armed: bool,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.calls.remove(&self.key);
        if self.armed {
            tracing::info!(run_id = %self.live.id, "the MCP client went away: cancelling its run");
            self.live.cancel.cancel();
        }
    }
}

/// A call's events as MCP messages: progress notifications, then its result.
pub struct McpCall {
    pub id: Value,
    pub token: Option<Value>,
    pub steps: u64,
    pub flight: InFlight,
    /// The response, once the run ended.
    pub response: Option<Value>,
}

impl McpCall {
    fn progress(&mut self, ev: &LoggedEvent, out: &mut String) {
        let Some(token) = &self.token else { return };
        let step: Value = serde_json::from_str(&ev.data).unwrap_or(Value::Null);
        let kind = step["type"].as_str().unwrap_or("step");
        let message = match step["tool"].as_str() {
            Some(tool) => format!("{kind} {tool}"),
            None => kind.to_string(),
        };
        self.steps += 1;
        data(
            out,
            &json!({"jsonrpc": "2.0", "method": "notifications/progress",
                    "params": {"progressToken": token, "progress": self.steps, "message": message}}),
        );
    }

    fn finish(&mut self, out: &mut String, result: Value) -> bool {
        self.flight.armed = false;
        let response = rpc::result(&self.id, result);
        data(out, &response);
        self.response = Some(response);
        true
    }
}

impl Encoder for McpCall {
    fn event(&mut self, ev: &LoggedEvent, out: &mut String) -> bool {
        match ev.name {
            "step" => {
                self.progress(ev, out);
                // An approval cannot be answered over MCP: the call ends, the run waits.
                if let Ok(StepEvent::ApprovalRequired { approval_id, .. }) =
                    serde_json::from_str::<StepEvent>(&ev.data)
                {
                    let text = format!(
                        "the run waits on approval {approval_id}; decide it with POST /api/approvals/{approval_id}"
                    );
                    let status = RunStatus::Running;
                    let result = tool_error(&text, Some((&self.flight.live, status)));
                    return self.finish(out, result);
                }
                false
            }
            "done" => {
                let result = match serde_json::from_str::<RunOutcome>(&ev.data) {
                    Ok(outcome) => outcome_result(&self.flight.live, outcome),
                    Err(_) => tool_error("the run's end could not be read", None),
                };
                self.finish(out, result)
            }
            _ => false,
        }
    }

    fn cut_short(&mut self, out: &mut String) {
        let result = tool_error("the run's events ended before its end", None);
        self.finish(out, result);
    }
}

/// Follows the run to its end without a stream: the response body.
pub async fn follow(state: &AppState, mut call: McpCall) -> Value {
    let mut events = state.runs.live_events(&call.flight.live, 0);
    let mut ignored = String::new();
    while let Some(ev) = events.next().await {
        ignored.clear();
        if call.event(&ev, &mut ignored) {
            break;
        }
    }
    if call.response.is_none() {
        call.cut_short(&mut ignored);
    }
    call.response.take().unwrap_or(Value::Null)
}
