//! Errors in OpenAI's shape, `{"error": {"message", "type", "param", "code"}}`, with the
//! statuses the official SDKs map to their exception classes (docs/protocols.md): 401 `invalid_api_key`,
//! 404 `model_not_found`, 400 `invalid_request_error`, 429 `rate_limit_exceeded`,
//! 429 `insufficient_quota` (the tenant's budget is used up).

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use crate::runs::RunError;
use crate::server::ApiError;

/// One OpenAI-style error response.
#[derive(Debug)]
pub struct OpenAiError {
    status: StatusCode,
    kind: &'static str,
    code: &'static str,
    param: Option<&'static str>,
    message: String,
    retry_after_s: Option<u64>,
}

impl OpenAiError {
    fn new(status: StatusCode, kind: &'static str, code: &'static str, message: String) -> Self {
        Self {
            status,
            kind,
            code,
            param: None,
            message,
            retry_after_s: None,
        }
    }

    /// 400: the request is malformed or asks for something agents do not do.
    pub fn invalid(param: Option<&'static str>, message: impl Into<String>) -> Self {
        Self {
            param,
            ..Self::new(
                StatusCode::BAD_REQUEST,
                "invalid_request_error",
                "invalid_request_error",
                message.into(),
            )
        }
    }

    /// 404 for a `model` that names no agent.
    pub fn model_not_found(model: &str) -> Self {
        Self {
            param: Some("model"),
            ..Self::new(
                StatusCode::NOT_FOUND,
                "invalid_request_error",
                "model_not_found",
                format!("The model '{model}' does not exist (GET /v1/models lists the agents)"),
            )
        }
    }

    /// 404 for a response, or a conversation named in a body, that is unknown, malformed or
    /// another tenant's.
    pub fn not_found(param: Option<&'static str>, message: impl Into<String>) -> Self {
        Self {
            param,
            ..Self::new(
                StatusCode::NOT_FOUND,
                "invalid_request_error",
                "not_found",
                message.into(),
            )
        }
    }

    /// 404 for an `X-Reagent-Conversation-Id` that is unknown, malformed or another tenant's.
    pub fn conversation_not_found() -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "invalid_request_error",
            "conversation_not_found",
            "The conversation named by X-Reagent-Conversation-Id does not exist".into(),
        )
    }

    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The request parameter the error is about.
    pub fn param(&self) -> Option<&'static str> {
        self.param
    }
}

impl OpenAiError {
    /// A request body read as `T`: JSON, an object, then its fields; each failure a 400.
    pub fn read_body<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, OpenAiError> {
        let value: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| {
            OpenAiError::invalid(None, format!("The request body is not valid JSON: {e}"))
        })?;
        if !value.is_object() {
            return Err(OpenAiError::invalid(
                None,
                "The request body must be a JSON object",
            ));
        }
        serde_json::from_value(value)
            .map_err(|e| OpenAiError::invalid(None, format!("Invalid request: {e}")))
    }
}

impl From<ApiError> for OpenAiError {
    fn from(e: ApiError) -> Self {
        let (status, _) = e.status_and_code();
        let (kind, code) = match &e {
            ApiError::Unauthorized => ("invalid_request_error", "invalid_api_key"),
            ApiError::RateLimited { .. } | ApiError::TooManyActiveRuns(_) => {
                ("rate_limit_error", "rate_limit_exceeded")
            }
            // OpenAI's answer when an account's quota is spent.
            ApiError::BudgetExceeded { .. } => ("insufficient_quota", "insufficient_quota"),
            ApiError::NotFound => ("invalid_request_error", "not_found"),
            ApiError::RunActive | ApiError::NoActiveRun => {
                ("invalid_request_error", "conversation_busy")
            }
            // Well-formed, but at odds with itself or with the run's state: not a busy one.
            ApiError::Conflict(_) => ("invalid_request_error", "conflict"),
            ApiError::PayloadTooLarge => ("invalid_request_error", "payload_too_large"),
            ApiError::ModelWithoutVision(_) => ("invalid_request_error", "model_without_vision"),
            ApiError::MethodNotAllowed => ("invalid_request_error", "method_not_allowed"),
            ApiError::Internal(_) => ("server_error", "internal_error"),
            ApiError::Unavailable(_) => ("server_error", "service_unavailable"),
            _ => ("invalid_request_error", "invalid_request_error"),
        };
        let message = match &e {
            ApiError::Internal(detail) => {
                tracing::error!(error = %detail, "request failed");
                "internal server error".to_string()
            }
            ApiError::Unauthorized => "Incorrect or missing API key".to_string(),
            other => other.to_string(),
        };
        let retry_after_s = match e {
            ApiError::RateLimited { retry_after_s }
            | ApiError::BudgetExceeded { retry_after_s, .. } => Some(retry_after_s),
            _ => None,
        };
        Self {
            retry_after_s,
            ..Self::new(status, kind, code, message)
        }
    }
}

impl From<RunError> for OpenAiError {
    fn from(e: RunError) -> Self {
        match e {
            RunError::NotFound => Self::conversation_not_found(),
            e @ RunError::AgentMismatch { .. } => Self::invalid(Some("model"), e.to_string()),
            other => ApiError::from(other).into(),
        }
    }
}

impl IntoResponse for OpenAiError {
    fn into_response(self) -> Response {
        let body = json!({"error": {
            "message": self.message,
            "type": self.kind,
            "param": self.param,
            "code": self.code,
        }});
        let mut response = (self.status, Json(body)).into_response();
        if let Some(s) = self.retry_after_s {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(s));
        }
        if self.status == StatusCode::UNAUTHORIZED {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response
    }
}
