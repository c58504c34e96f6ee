//! `POST /ag-ui/{agent}` (docs/protocols.md): an AG-UI 1.0 `RunAgentInput` in, AG-UI events out.
//! The thread is a conversation, the resent history is reduced to its new user turns, `resume[]`
//! answers the approvals a run stopped on and the frontend tools (`tools`, caller tools) it
//! called (`encode` ends a stream with an interrupt outcome there; `tool` messages or resume
//! payloads carry the outputs), `context` becomes a section of the run's system prompt, `state`
//! and `forwardedProps` come back in `RUN_STARTED.input`. Files: `encode` (the event mapping).

mod encode;
#[cfg(test)]
mod tests;

use axum::extract::State;
use axum::response::Response;
use axum::Extension;
use serde::Deserialize;
use serde_json::{json, Value};

use super::body::{data, encoded_response};
use super::images::ag_ui_images;
use super::threads::{begin, require_agent, ApprovalAnswer, ClientTurn, FrontRequest};
use crate::agent::caller_tools::ToolOutput;
use crate::domain::MessageRole;
use crate::llm::ToolDefinition;
use crate::server::error::{ApiJson, ApiPath};
use crate::server::state::AppState;
use crate::server::{ApiError, Owner};
use encode::AgUi;

/// The fields of `RunAgentInput` reagent reads; the rest is echoed in `RUN_STARTED.input`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunAgentInput {
    pub thread_id: String,
    pub run_id: String,
    #[serde(default)]
    pub parent_run_id: Option<String>,
    pub messages: Vec<InputMessage>,
    /// Frontend tools: caller tools, run by the client.
    #[serde(default)]
    pub tools: Vec<InputTool>,
    #[serde(default)]
    pub context: Vec<ContextEntry>,
    #[serde(default)]
    pub resume: Vec<ResumeEntry>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InputMessage {
    /// The client's id, not read (but a string, as AG-UI says).
    #[serde(default)]
    #[allow(dead_code)]
    pub id: Option<String>,
    pub role: String,
    #[serde(default)]
    pub content: Option<Value>,
    /// A `tool` message's call: a frontend tool's output.
    #[serde(default)]
    pub tool_call_id: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct InputTool {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub parameters: Option<Value>,
}

#[derive(Debug, Deserialize)]
pub struct ContextEntry {
    pub description: String,
    pub value: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResumeEntry {
    pub interrupt_id: String,
    pub status: String,
    #[serde(default)]
    pub payload: Option<Value>,
}

/// A message's text: a string, or its `text` parts joined by new lines.
pub fn text_of(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter(|p| p["type"] == "text")
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// `resolved` approves unless the payload says `approved: false`; `cancelled` rejects.
fn answer_of(entry: &ResumeEntry) -> Result<ApprovalAnswer, ApiError> {
    let payload = entry.payload.as_ref();
    let approve = match entry.status.as_str() {
        "resolved" => payload
            .and_then(|p| p.get("approved").or_else(|| p.get("approve")))
            .and_then(Value::as_bool)
            .unwrap_or(true),
        "cancelled" => false,
        other => {
            return Err(ApiError::invalid(format!(
                "resume status '{other}' (expected resolved or cancelled)"
            )))
        }
    };
    Ok(ApprovalAnswer {
        id: entry.interrupt_id.clone(),
        approve,
        reason: payload
            .and_then(|p| p.get("reason"))
            .and_then(Value::as_str)
            .map(str::to_string),
    })
}

/// The outputs of frontend tool calls: the `tool` messages after the last assistant message
/// (reagent's own tool results carry a run-prefixed id and are left out), and resume entries for
/// calls that no tool message answers (their payload is the output).
fn outputs_of(input: &RunAgentInput) -> Vec<ToolOutput> {
    let after = input
        .messages
        .iter()
        .rposition(|m| m.role == "assistant")
        .map_or(0, |i| i + 1);
    let mut outputs: Vec<ToolOutput> = input.messages[after..]
        .iter()
        .filter(|m| m.role == "tool")
        .filter_map(|m| {
            let id = m.tool_call_id.as_deref()?;
            (!encode::is_own_call(id)).then(|| ToolOutput {
                call_id: id.to_string(),
                output: text_of(m.content.as_ref()),
            })
        })
        .collect();
    for entry in input
        .resume
        .iter()
        .filter(|e| !is_approval(&e.interrupt_id))
    {
        if outputs.iter().any(|o| o.call_id == entry.interrupt_id) {
            continue;
        }
        let output = match &entry.payload {
            Some(Value::String(s)) => s.clone(),
            Some(other) => other.to_string(),
            None => String::new(),
        };
        outputs.push(ToolOutput {
            call_id: entry.interrupt_id.clone(),
            output,
        });
    }
    outputs
}

/// Approval interrupts are named by the approval's UUID, caller tool ones by the call id.
fn is_approval(interrupt_id: &str) -> bool {
    uuid::Uuid::parse_str(interrupt_id).is_ok()
}

/// The front-end request of an input.
fn front_request(agent: String, input: &RunAgentInput) -> Result<FrontRequest, ApiError> {
    let turns = input
        .messages
        .iter()
        .filter_map(|m| {
            let role = match m.role.as_str() {
                "user" => MessageRole::User,
                "assistant" => MessageRole::Assistant,
                _ => return None,
            };
            Some(ClientTurn {
                role,
                text: text_of(m.content.as_ref()),
                images: ag_ui_images(m.content.as_ref()),
            })
        })
        .collect();
    let context = (!input.context.is_empty()).then(|| {
        let lines: Vec<String> = input
            .context
            .iter()
            .map(|c| format!("- {}: {}", c.description, c.value))
            .collect();
        format!("Context from the application:\n{}", lines.join("\n"))
    });
    Ok(FrontRequest {
        agent,
        thread: input.thread_id.clone(),
        turns,
        context,
        answers: input
            .resume
            .iter()
            .filter(|e| is_approval(&e.interrupt_id))
            .map(answer_of)
            .collect::<Result<_, _>>()?,
        tools: input
            .tools
            .iter()
            .map(|t| ToolDefinition {
                name: t.name.clone(),
                description: t.description.clone(),
                parameters: t
                    .parameters
                    .clone()
                    .unwrap_or_else(|| json!({"type": "object", "properties": {}})),
            })
            .collect(),
        outputs: outputs_of(input),
    })
}

pub async fn run(
    State(state): State<AppState>,
    Extension(owner): Extension<Owner>,
    ApiPath(agent): ApiPath<String>,
    ApiJson(body): ApiJson<Value>,
) -> Result<Response, ApiError> {
    require_agent(&state, &owner.0, &agent).await?;
    let input: RunAgentInput = serde_json::from_value(body.clone())
        .map_err(|e| ApiError::invalid(format!("not a RunAgentInput: {e}")))?;
    let request = front_request(agent, &input)?;
    let attached = begin(&state, &owner.0, request).await?;
    let mut started = json!({
        "type": "RUN_STARTED",
        "threadId": input.thread_id,
        "runId": input.run_id,
        "input": body,
    });
    if let Some(parent) = &input.parent_run_id {
        started["parentRunId"] = json!(parent);
    }
    let mut first = String::new();
    data(&mut first, &started);
    let encoder = AgUi::new(input.thread_id, input.run_id, attached.run_id);
    Ok(encoded_response(
        &state,
        first,
        attached.events,
        encoder,
        None,
    ))
}
