//! `POST /ai-sdk/{agent}` (docs/protocols.md): the AI SDK's `useChat` request in, its UI message
//! stream out. The chat id is the conversation; the last user message is the query (the rest of
//! the resent history is already stored); an assistant message last, carrying answered tool
//! approvals (`addToolApprovalResponse`) or caller tool outputs (`addToolOutput`), answers what
//! its run waits on and the stream goes on. Files: `encode` (the chunk mapping), `reconnect`
//! (`GET …/{id}/stream`, the transport's resume).

mod encode;
pub mod reconnect;
#[cfg(test)]
mod tests;

use axum::extract::State;
use axum::http::{HeaderName, HeaderValue};
use axum::response::Response;
use axum::Extension;
use serde::Deserialize;
use serde_json::{json, Value};

use super::body::{data, encoded_response};
use super::images::ai_sdk_images;
use super::threads::{begin, require_agent, ApprovalAnswer, ClientTurn, FrontRequest};
use crate::agent::caller_tools::ToolOutput;
use crate::domain::MessageRole;
use crate::llm::ToolDefinition;
use crate::server::error::{ApiJson, ApiPath};
use crate::server::state::AppState;
use crate::server::{ApiError, Owner};
use encode::AiSdk;

/// The header that names the stream protocol.
pub const STREAM_HEADER: &str = "x-vercel-ai-ui-message-stream";

/// The `useChat` request body (`DefaultChatTransport`); other fields are ignored.
#[derive(Debug, Deserialize)]
pub struct ChatRequest {
    pub id: String,
    pub messages: Vec<UiMessage>,
    /// Caller tools, sent in the transport's `body`: `{name, description?, parameters?}` or
    /// OpenAI's `{type: "function", function: {…}}`.
    #[serde(default)]
    pub tools: Vec<Value>,
}

#[derive(Debug, Deserialize)]
pub struct UiMessage {
    #[serde(default)]
    pub id: Option<String>,
    pub role: String,
    #[serde(default)]
    pub parts: Vec<Value>,
}

impl UiMessage {
    fn text(&self) -> String {
        self.parts
            .iter()
            .filter(|p| p["type"] == "text")
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The outputs of caller tool calls this message's parts carry (`addToolOutput`); reagent's
    /// own tool parts are provider-executed.
    fn outputs(&self) -> Vec<ToolOutput> {
        self.parts
            .iter()
            .filter(|p| p["providerExecuted"] != true)
            .filter_map(|p| {
                let output = match p["state"].as_str()? {
                    "output-available" => match &p["output"] {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    },
                    "output-error" => format!("Error: {}", p["errorText"].as_str().unwrap_or("")),
                    _ => return None,
                };
                Some(ToolOutput {
                    call_id: p["toolCallId"].as_str()?.to_string(),
                    output,
                })
            })
            .collect()
    }

    /// The tool approvals this message's parts answer.
    fn approvals(&self) -> Vec<ApprovalAnswer> {
        self.parts
            .iter()
            .filter(|p| p["state"] == "approval-responded")
            .filter_map(|p| {
                let approval = p.get("approval")?;
                Some(ApprovalAnswer {
                    id: approval["id"].as_str()?.to_string(),
                    approve: approval["approved"].as_bool()?,
                    reason: approval["reason"].as_str().map(str::to_string),
                })
            })
            .collect()
    }
}

fn front_request(agent: String, chat: &ChatRequest) -> FrontRequest {
    let turns = chat
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
                text: m.text(),
                images: ai_sdk_images(&m.parts),
            })
        })
        .collect();
    let (answers, outputs) = match chat.messages.last() {
        Some(last) if last.role == "assistant" => (last.approvals(), last.outputs()),
        _ => (Vec::new(), Vec::new()),
    };
    FrontRequest {
        agent,
        thread: chat.id.clone(),
        turns,
        context: None,
        answers,
        tools: chat.tools.iter().filter_map(tool_definition).collect(),
        outputs,
    }
}

/// A caller tool's definition, in either accepted shape.
fn tool_definition(tool: &Value) -> Option<ToolDefinition> {
    let f = tool.get("function").unwrap_or(tool);
    Some(ToolDefinition {
        name: f["name"].as_str()?.to_string(),
        description: f["description"].as_str().unwrap_or_default().to_string(),
        parameters: match &f["parameters"] {
            Value::Object(_) => f["parameters"].clone(),
            _ => json!({"type": "object", "properties": {}}),
        },
    })
}

pub async fn chat(
    State(state): State<AppState>,
    Extension(owner): Extension<Owner>,
    ApiPath(agent): ApiPath<String>,
    ApiJson(body): ApiJson<Value>,
) -> Result<Response, ApiError> {
    require_agent(&state, &owner.0, &agent).await?;
    let chat: ChatRequest = serde_json::from_value(body)
        .map_err(|e| ApiError::invalid(format!("not a useChat request: {e}")))?;
    let request = front_request(agent, &chat);
    let approved = !request.answers.is_empty();
    let attached = begin(&state, &owner.0, request).await?;
    // A continuation adds to the assistant message the client already shows.
    let message_id = match chat.messages.last() {
        Some(last) if attached.resumed && last.role == "assistant" => last.id.clone(),
        _ => None,
    }
    .unwrap_or_else(|| format!("msg-{}", attached.run_id.simple()));
    let mut first = String::new();
    data(
        &mut first,
        &json!({"type": "start", "messageId": message_id,
                "messageMetadata": {"runId": attached.run_id, "conversationId": attached.conversation_id}}),
    );
    data(&mut first, &json!({"type": "start-step"}));
    let encoder = AiSdk::new(attached.run_id, approved);
    Ok(encoded_response(
        &state,
        first,
        attached.events,
        encoder,
        Some((
            HeaderName::from_static(STREAM_HEADER),
            HeaderValue::from_static("v1"),
        )),
    ))
}
