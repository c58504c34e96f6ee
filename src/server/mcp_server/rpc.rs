//! The JSON-RPC 2.0 envelope of `/mcp`: a request's parts, results and errors as MCP's
//! streamable HTTP carries them (one JSON body, or one `data:` event of a stream).

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;
pub const INTERNAL_ERROR: i64 = -32603;

/// A message read from a POST body.
pub enum Message {
    /// A request: it gets a response.
    Request {
        id: Value,
        method: String,
        params: Value,
    },
    /// A notification, or a response to a server request: 202, no body.
    Notification { method: String, params: Value },
}

/// A body that is not a message: the error response's parts.
pub struct Invalid {
    pub id: Value,
    pub code: i64,
    pub message: String,
}

impl Message {
    /// Reads one message; the error to answer with when it is not one.
    pub fn parse(body: &[u8]) -> Result<Self, Invalid> {
        let value: Value = serde_json::from_slice(body).map_err(|e| Invalid {
            id: Value::Null,
            code: PARSE_ERROR,
            message: format!("parse error: {e}"),
        })?;
        if value.is_array() {
            // Batches left the protocol in 2025-06-18.
            return Err(Invalid {
                id: Value::Null,
                code: INVALID_REQUEST,
                message: "batches are not supported".into(),
            });
        }
        let id = value.get("id").cloned();
        let valid_id = matches!(&id, Some(Value::String(_) | Value::Number(_)));
        let params = value.get("params").cloned().unwrap_or(Value::Null);
        match (value.get("jsonrpc"), value.get("method"), id) {
            (Some(v), Some(Value::String(m)), Some(id)) if v == "2.0" && valid_id => {
                Ok(Self::Request {
                    id,
                    method: m.clone(),
                    params,
                })
            }
            (Some(v), Some(Value::String(m)), None) if v == "2.0" => Ok(Self::Notification {
                method: m.clone(),
                params,
            }),
            // A client's response (to a request this server never sends): accepted.
            (Some(v), None, Some(_))
                if v == "2.0"
                    && (value.get("result").is_some() || value.get("error").is_some()) =>
            {
                Ok(Self::Notification {
                    method: String::new(),
                    params: Value::Null,
                })
            }
            (_, _, id) => Err(Invalid {
                id: id.filter(|_| valid_id).unwrap_or(Value::Null),
                code: INVALID_REQUEST,
                message: "not a JSON-RPC 2.0 request".into(),
            }),
        }
    }
}

/// A success response's body.
pub fn result(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// An error response's body.
pub fn error(id: &Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// An error as the whole HTTP answer: 400 for a message that is not one (as the transport
/// says), 200 otherwise.
pub fn error_response(id: Value, code: i64, message: &str) -> Response {
    let status = match code {
        PARSE_ERROR | INVALID_REQUEST => StatusCode::BAD_REQUEST,
        _ => StatusCode::OK,
    };
    json_response(status, &error(&id, code, message))
}

pub fn json_response(status: StatusCode, body: &Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// Appends one message as a `data:` event.
pub fn data(out: &mut String, value: &Value) {
    out.push_str("data: ");
    out.push_str(&value.to_string());
    out.push_str("\n\n");
}
