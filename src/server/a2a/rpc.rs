//! The JSON-RPC 2.0 envelope of `/a2a/{agent}`: a request's parts, which A2A operation and
//! which wire version its method name asks for (v1.0's `SendMessage`, v0.3's `message/send`),
//! and error objects with A2A's codes — on v1.0, with the `google.rpc.ErrorInfo` detail its
//! clients read.

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;
pub const INTERNAL_ERROR: i64 = -32603;
pub const TASK_NOT_FOUND: i64 = -32001;
pub const TASK_NOT_CANCELABLE: i64 = -32002;
pub const PUSH_NOT_SUPPORTED: i64 = -32003;
pub const UNSUPPORTED: i64 = -32004;
pub const CONTENT_TYPE: i64 = -32005;
pub const NO_EXTENDED_CARD: i64 = -32007;
pub const VERSION_NOT_SUPPORTED: i64 = -32009;

/// The wire a client speaks, told by the method name it calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wire {
    /// A2A 1.0: PascalCase methods, the protobuf JSON of `a2a.proto` (`TASK_STATE_*`, unified
    /// parts, a `StreamResponse` wrapper around each streamed result).
    V1,
    /// A2A 0.3: slash methods, `kind` discriminators, kebab-case states, `final` flags.
    V03,
}

/// The operations this server answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Send,
    Stream,
    Get,
    Cancel,
    Subscribe,
}

/// What a method name asks for: an operation on a wire, or the error for one that is A2A's
/// but not offered here.
pub fn method(name: &str) -> Result<(Op, Wire), RpcError> {
    let found = match name {
        "SendMessage" => (Op::Send, Wire::V1),
        "SendStreamingMessage" => (Op::Stream, Wire::V1),
        "GetTask" => (Op::Get, Wire::V1),
        "CancelTask" => (Op::Cancel, Wire::V1),
        "SubscribeToTask" => (Op::Subscribe, Wire::V1),
        "message/send" => (Op::Send, Wire::V03),
        "message/stream" => (Op::Stream, Wire::V03),
        "tasks/get" => (Op::Get, Wire::V03),
        "tasks/cancel" => (Op::Cancel, Wire::V03),
        "tasks/resubscribe" => (Op::Subscribe, Wire::V03),
        _ => return Err(unoffered(name)),
    };
    Ok(found)
}

/// The error of a method this server does not answer.
fn unoffered(name: &str) -> RpcError {
    let push = name.contains("PushNotificationConfig") || name.contains("pushNotificationConfig");
    if push {
        return RpcError::new(PUSH_NOT_SUPPORTED, "push notifications are not supported");
    }
    if matches!(
        name,
        "GetExtendedAgentCard" | "agent/getAuthenticatedExtendedCard"
    ) {
        return RpcError::new(NO_EXTENDED_CARD, "this agent has no extended card");
    }
    if matches!(name, "ListTasks" | "tasks/list") {
        return RpcError::new(UNSUPPORTED, "listing tasks is not supported");
    }
    RpcError::new(METHOD_NOT_FOUND, format!("method not found: {name}"))
}

/// A JSON-RPC error: its code and message.
#[derive(Clone, Debug, PartialEq)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
}

impl RpcError {
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }

    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(INVALID_PARAMS, message)
    }

    pub fn task_not_found() -> Self {
        Self::new(TASK_NOT_FOUND, "task not found")
    }

    /// The error object; on v1.0 an A2A error (-32001…-32009) carries its `ErrorInfo`.
    pub fn object(&self, wire: Wire) -> Value {
        let mut error = json!({"code": self.code, "message": self.message});
        if let (Wire::V1, Some(reason)) = (wire, reason(self.code)) {
            error["data"] = json!([{
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": reason,
                "domain": "a2a-protocol.org",
                "metadata": {},
            }]);
        }
        error
    }
}

fn reason(code: i64) -> Option<&'static str> {
    Some(match code {
        TASK_NOT_FOUND => "TASK_NOT_FOUND",
        TASK_NOT_CANCELABLE => "TASK_NOT_CANCELABLE",
        PUSH_NOT_SUPPORTED => "PUSH_NOTIFICATION_NOT_SUPPORTED",
        UNSUPPORTED => "UNSUPPORTED_OPERATION",
        CONTENT_TYPE => "CONTENT_TYPE_NOT_SUPPORTED",
        NO_EXTENDED_CARD => "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
        VERSION_NOT_SUPPORTED => "VERSION_NOT_SUPPORTED",
        _ => return None,
    })
}

/// A request read from a POST body.
#[derive(Debug)]
pub struct Request {
    pub id: Value,
    pub method: String,
    pub params: Value,
}

impl Request {
    /// Reads one request; the id to answer with (null when unknown) and the error when the
    /// body is not one.
    pub fn parse(body: &[u8]) -> Result<Self, (Value, RpcError)> {
        let value: Value = serde_json::from_slice(body).map_err(|e| {
            (
                Value::Null,
                RpcError::new(PARSE_ERROR, format!("parse error: {e}")),
            )
        })?;
        let id = value.get("id").cloned().unwrap_or(Value::Null);
        let valid_id = matches!(&id, Value::String(_) | Value::Number(_));
        let not_request = |message: &str| {
            let id = if valid_id { id.clone() } else { Value::Null };
            Err((id, RpcError::new(INVALID_REQUEST, message)))
        };
        if !value.is_object() || value["jsonrpc"] != "2.0" || !valid_id {
            return not_request("not a JSON-RPC 2.0 request with an id");
        }
        let Some(method) = value["method"].as_str() else {
            return not_request("`method` must be a string");
        };
        let params = value.get("params").cloned().unwrap_or_else(|| json!({}));
        if !params.is_object() {
            return Err((id, RpcError::invalid("`params` must be an object")));
        }
        Ok(Self {
            id,
            method: method.to_string(),
            params,
        })
    }
}

/// A success response's body.
pub fn result(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// An error response's body.
pub fn error(id: &Value, wire: Wire, error: &RpcError) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": error.object(wire)})
}

/// A JSON body; JSON-RPC errors are answered with 200, as A2A's SDK servers do.
pub fn json_response(body: &Value) -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// Appends one streamed response as an SSE event, with the run event's id when it has one
/// (what a client resubscribing sends back as `Last-Event-ID`).
pub fn frame(out: &mut String, event_id: Option<u64>, value: &Value) {
    if let Some(id) = event_id {
        out.push_str("id: ");
        out.push_str(&id.to_string());
        out.push('\n');
    }
    out.push_str("data: ");
    out.push_str(&value.to_string());
    out.push_str("\n\n");
}

impl From<crate::runs::RunError> for RpcError {
    /// The run layer's refusals in A2A's terms: what is not the caller's is `TaskNotFound`,
    /// bad input invalid params, a busy or finished thread an unsupported operation.
    fn from(e: crate::runs::RunError) -> Self {
        use crate::server::ApiError;
        match ApiError::from(e) {
            ApiError::NotFound => Self::task_not_found(),
            e @ (ApiError::InvalidRequest(_) | ApiError::ModelWithoutVision(_)) => {
                Self::invalid(e.to_string())
            }
            e @ (ApiError::Conflict(_) | ApiError::RunActive | ApiError::NoActiveRun) => {
                Self::new(UNSUPPORTED, e.to_string())
            }
            ApiError::Internal(detail) => {
                tracing::error!(error = %detail, "an A2A request failed");
                Self::new(INTERNAL_ERROR, "internal server error")
            }
            other => Self::new(INTERNAL_ERROR, other.to_string()),
        }
    }
}
