//! [`ApiError`]: the one error type of the HTTP edge. Every failure a handler can meet — the
//! run machinery's, the store's, axum's own extractor rejections — becomes one variant, and one
//! `match` turns it into the docs/api.md status and `{"error":{"code","message"}}` body. Internal
//! details (driver messages, SQL) go to the log only; a client sees a generic 500 text.
//!
//! The extractor wrappers ([`ApiJson`], [`ApiPath`], [`ApiQuery`]) exist so that malformed JSON,
//! a wrong content type, a malformed UUID in a path or a bad query string answer in the same
//! JSON shape instead of axum's plain-text rejections.

use super::views::{ErrorBody, ErrorDetail};
use crate::runs::RunError;
use crate::store::StoreError;
use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::extract::FromRequest;
use axum::extract::FromRequestParts;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;

/// What a request can fail with, by docs/api.md code.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{0}")]
    InvalidRequest(String),
    #[error("missing or invalid API key")]
    Unauthorized,
    #[error("not found")]
    NotFound,
    /// An agent named in a body that the caller cannot see: the same `404` as an agent in a path,
    /// so another tenant's agent and a name that exists nowhere are indistinguishable.
    #[error("unknown agent '{0}'")]
    UnknownAgent(String),
    #[error("method not allowed")]
    MethodNotAllowed,
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    ModelWithoutVision(String),
    #[error("the conversation already has an active run")]
    RunActive,
    #[error("no active run for this conversation; start a new run instead")]
    NoActiveRun,
    #[error("request body too large")]
    PayloadTooLarge,
    #[error("rate limit exceeded")]
    RateLimited { retry_after_s: u64 },
    /// The tenant's budget is used up until its window ends.
    #[error("{message}")]
    BudgetExceeded { message: String, retry_after_s: u64 },
    #[error("{0}")]
    TooManyActiveRuns(String),
    /// The detail is logged, never sent.
    #[error("internal error: {0}")]
    Internal(String),
    #[error("{0}")]
    Unavailable(String),
}

impl ApiError {
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::InvalidRequest(message.into())
    }

    /// The status and the documented error code (docs/api.md).
    pub fn status_and_code(&self) -> (StatusCode, &'static str) {
        match self {
            Self::InvalidRequest(_) => (StatusCode::BAD_REQUEST, "invalid_request"),
            Self::Unauthorized => (StatusCode::UNAUTHORIZED, "unauthorized"),
            Self::NotFound | Self::UnknownAgent(_) => (StatusCode::NOT_FOUND, "not_found"),
            Self::MethodNotAllowed => (StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed"),
            Self::Conflict(_) => (StatusCode::CONFLICT, "conflict"),
            Self::ModelWithoutVision(_) => (StatusCode::BAD_REQUEST, "model_without_vision"),
            Self::RunActive => (StatusCode::CONFLICT, "run_active"),
            Self::NoActiveRun => (StatusCode::CONFLICT, "no_active_run"),
            Self::PayloadTooLarge => (StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large"),
            Self::RateLimited { .. } => (StatusCode::TOO_MANY_REQUESTS, "rate_limited"),
            Self::BudgetExceeded { .. } => (StatusCode::TOO_MANY_REQUESTS, "budget_exceeded"),
            Self::TooManyActiveRuns(_) => (StatusCode::TOO_MANY_REQUESTS, "too_many_active_runs"),
            Self::Internal(_) => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
            Self::Unavailable(_) => (StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, code) = self.status_and_code();
        let message = match &self {
            Self::Internal(detail) => {
                tracing::error!(error = %detail, "request failed");
                "internal server error".to_string()
            }
            other => other.to_string(),
        };
        let body = Json(ErrorBody {
            error: ErrorDetail {
                code: code.to_string(),
                message,
            },
        });
        let mut response = (status, body).into_response();
        if let Self::RateLimited { retry_after_s } | Self::BudgetExceeded { retry_after_s, .. } =
            self
        {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(retry_after_s));
        }
        if let Self::Unauthorized = self {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::InvalidCursor => Self::invalid("invalid pagination cursor"),
            StoreError::NotFound => Self::NotFound,
            StoreError::Unavailable(detail) => {
                tracing::error!(error = %detail, "database unavailable");
                Self::Unavailable("the database is unavailable; try again later".into())
            }
            other => Self::Internal(other.to_string()),
        }
    }
}

/// The agent catalog's refusals answer as the run layer's do.
impl From<crate::runs::CatalogError> for ApiError {
    fn from(e: crate::runs::CatalogError) -> Self {
        RunError::from(e).into()
    }
}

impl From<RunError> for ApiError {
    fn from(e: RunError) -> Self {
        match e {
            RunError::Active => Self::RunActive,
            // The partial unique index of runs: another process (or a race) holds the slot.
            RunError::Store(StoreError::Conflict(_)) => Self::RunActive,
            RunError::NoActiveRun => Self::NoActiveRun,
            RunError::NotFound => Self::NotFound,
            RunError::Finished => Self::Conflict("the run has already finished".into()),
            RunError::Conflict(message) => Self::Conflict(message),
            e @ RunError::ModelWithoutVision(_) => Self::ModelWithoutVision(e.to_string()),
            RunError::NotPending => {
                Self::Conflict("the interrupt was already delivered to the agent".into())
            }
            RunError::UnknownModel(name) => Self::invalid(format!("unknown model '{name}'")),
            RunError::UnknownAgent(name) => Self::UnknownAgent(name),
            RunError::Invalid(message) => Self::invalid(message),
            e @ RunError::AgentMismatch { .. } => Self::invalid(e.to_string()),
            RunError::Internal(message) => Self::Internal(message),
            RunError::ShuttingDown => Self::Unavailable("server is shutting down".into()),
            RunError::Unavailable(message) => Self::Unavailable(message),
            RunError::Store(e) => e.into(),
            RunError::BudgetExceeded {
                message,
                retry_after,
            } => Self::BudgetExceeded {
                message,
                retry_after_s: retry_after,
            },
            e @ RunError::TooManyActiveRuns(_) => Self::TooManyActiveRuns(e.to_string()),
        }
    }
}

impl From<JsonRejection> for ApiError {
    fn from(r: JsonRejection) -> Self {
        if r.status() == StatusCode::PAYLOAD_TOO_LARGE {
            Self::PayloadTooLarge
        } else {
            Self::InvalidRequest(r.body_text())
        }
    }
}

impl From<PathRejection> for ApiError {
    /// A malformed id names nothing that exists: 404 (docs/api.md).
    fn from(_: PathRejection) -> Self {
        Self::NotFound
    }
}

impl From<QueryRejection> for ApiError {
    fn from(r: QueryRejection) -> Self {
        Self::InvalidRequest(r.body_text())
    }
}

/// `Json<T>` whose rejections are [`ApiError`]s.
#[derive(FromRequest)]
#[from_request(via(axum::Json), rejection(ApiError))]
pub struct ApiJson<T>(pub T);

/// `Path<T>` whose rejections are [`ApiError`]s (404).
#[derive(FromRequestParts)]
#[from_request(via(axum::extract::Path), rejection(ApiError))]
pub struct ApiPath<T>(pub T);

/// `Query<T>` whose rejections are [`ApiError`]s (400).
#[derive(FromRequestParts)]
#[from_request(via(axum::extract::Query), rejection(ApiError))]
pub struct ApiQuery<T>(pub T);

/// The router's fallback: unknown routes answer JSON 404.
pub async fn not_found() -> ApiError {
    ApiError::NotFound
}

/// Known route, wrong method: JSON 405.
pub async fn method_not_allowed() -> ApiError {
    ApiError::MethodNotAllowed
}

/// `CatchPanicLayer` hook: a panicking handler answers a generic JSON 500.
pub fn panic_response(_: Box<dyn std::any::Any + Send + 'static>) -> Response {
    ApiError::Internal("a request handler panicked".into()).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn internal_errors_hide_their_detail() {
        let response = ApiError::Internal("SELECT secret FROM x".into()).into_response();
        assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 16)
            .await
            .unwrap();
        let text = String::from_utf8(bytes.to_vec()).unwrap();
        assert!(!text.contains("secret"), "{text}");
        assert!(text.contains("\"internal\""), "{text}");
    }

    #[test]
    fn run_errors_map_to_spec_codes() {
        let cases = [
            (ApiError::from(RunError::Active), 409, "run_active"),
            (ApiError::from(RunError::NoActiveRun), 409, "no_active_run"),
            (ApiError::from(RunError::Finished), 409, "conflict"),
            (ApiError::from(RunError::NotFound), 404, "not_found"),
            (
                ApiError::from(RunError::UnknownModel("x".into())),
                400,
                "invalid_request",
            ),
            (
                ApiError::from(RunError::Store(StoreError::Conflict("idx".into()))),
                409,
                "run_active",
            ),
            (
                ApiError::from(RunError::Store(StoreError::Database("boom".into()))),
                500,
                "internal",
            ),
        ];
        for (err, status, code) in cases {
            let (s, c) = err.status_and_code();
            assert_eq!((s.as_u16(), c), (status, code), "{err:?}");
        }
    }

    #[tokio::test]
    async fn a_panicking_handler_answers_json_500() {
        use tower::ServiceExt;
        async fn boom() -> &'static str {
            panic!("handler bug")
        }
        let app = axum::Router::new()
            .route("/boom", axum::routing::get(boom))
            .layer(tower_http::catch_panic::CatchPanicLayer::custom(
                panic_response,
            ));
        let request = axum::http::Request::get("/boom")
            .body(axum::body::Body::empty())
            .unwrap();
        let response = app.oneshot(request).await.unwrap();
        assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 16)
            .await
            .unwrap();
        let body: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(body["error"]["code"], "internal");
        assert!(!body.to_string().contains("handler bug"));
    }

    #[test]
    fn rate_limited_sets_retry_after() {
        let response = ApiError::RateLimited { retry_after_s: 7 }.into_response();
        assert_eq!(response.status(), 429);
        assert_eq!(response.headers()[header::RETRY_AFTER], "7");
    }
}
