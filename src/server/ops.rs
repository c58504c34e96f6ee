//! Operations and catalog (SPEC §3.4): liveness, readiness (database round trip), Prometheus
//! metrics, the tool and model catalogs (no secrets), and artifact downloads. Artifacts are
//! served as attachments-by-name with `nosniff`, and HTML under a `sandbox` CSP, because their
//! bytes come from arbitrary tools and must not run script in the service's origin.

use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde::Serialize;
use serde_json::{json, Value};
use uuid::Uuid;

use super::auth::Owner;
use super::error::{ApiError, ApiPath};
use super::state::AppState;
use crate::llm::registry::ModelInfo;
use crate::tools::ToolSource;

#[derive(Debug, Serialize)]
pub struct ToolInfo {
    pub name: String,
    pub description: String,
    pub parameters: Value,
    pub source: ToolSource,
}

#[utoipa::path(get, path = "/healthz", tag = "operations",
    responses((status = 200, description = "The process serves requests", body = Value)))]
pub async fn healthz() -> Json<Value> {
    Json(json!({"status": "ok"}))
}

#[utoipa::path(get, path = "/readyz", tag = "operations",
    responses((status = 200, description = "Database reachable and migrated", body = Value),
              (status = 503, description = "`unavailable`")))]
pub async fn readyz(State(state): State<AppState>) -> Result<Json<Value>, ApiError> {
    match state.store.ping().await {
        Ok(()) => Ok(Json(
            json!({"status": "ready", "database": state.store.backend()}),
        )),
        Err(e) => {
            tracing::warn!(error = %e, "readiness check failed");
            Err(ApiError::Unavailable("database unreachable".into()))
        }
    }
}

#[utoipa::path(get, path = "/metrics", tag = "operations",
    responses((status = 200, description = "Prometheus text format", content_type = "text/plain"),
              (status = 401, description = "A metrics key is configured and was not given")))]
pub async fn metrics(State(state): State<AppState>, headers: HeaderMap) -> Response {
    if let Err(e) = state.auth.check_metrics(&headers) {
        return e.into_response();
    }
    let text = state.metrics.render(state.runs.active_runs());
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
        )],
        text,
    )
        .into_response()
}

#[utoipa::path(get, path = "/api/tools", tag = "catalog",
    responses((status = 200, description = "`[{name, description, parameters, source}]`", body = Value)))]
pub async fn tools(State(state): State<AppState>) -> Json<Vec<ToolInfo>> {
    Json(
        state
            .runs
            .tools()
            .iter()
            .map(|t| ToolInfo {
                name: t.name().to_string(),
                description: t.description().to_string(),
                parameters: t.parameters(),
                source: t.source(),
            })
            .collect(),
    )
}

#[utoipa::path(get, path = "/api/models", tag = "catalog",
    responses((status = 200, description = "`[{name, model, abilities, context_window, default}]`", body = Value)))]
pub async fn models(State(state): State<AppState>) -> Json<Vec<ModelInfo>> {
    Json(state.models.infos())
}

/// `name` reduced to a safe quoted-string for `Content-Disposition`.
fn disposition(name: &str) -> String {
    let safe: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_graphic() && c != '"' && c != '\\' || c == ' ' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let safe = if safe.trim().is_empty() {
        "artifact".to_string()
    } else {
        safe
    };
    format!("inline; filename=\"{safe}\"")
}

#[utoipa::path(get, path = "/api/artifacts/{id}", tag = "catalog",
    params(("id" = Uuid, Path, description = "Artifact id")),
    responses((status = 200, description = "The artifact bytes with their content type"),
              (status = 404, description = "Unknown or another tenant's")))]
pub async fn artifact(
    State(state): State<AppState>,
    Extension(owner): Extension<Owner>,
    ApiPath(id): ApiPath<Uuid>,
) -> Result<Response, ApiError> {
    let artifact = state
        .store
        .get_artifact(&owner.0, id)
        .await?
        .ok_or(ApiError::NotFound)?;
    let content_type = HeaderValue::from_str(&artifact.mime_type)
        .unwrap_or_else(|_| HeaderValue::from_static("application/octet-stream"));
    let is_html = artifact
        .mime_type
        .to_ascii_lowercase()
        .starts_with("text/html");
    let mut response = (StatusCode::OK, artifact.data).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, content_type);
    if let Ok(v) = HeaderValue::from_str(&disposition(&artifact.name)) {
        headers.insert(header::CONTENT_DISPOSITION, v);
    }
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    if is_html {
        headers.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static("sandbox"),
        );
    }
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disposition_is_always_a_safe_header() {
        assert_eq!(
            disposition("report.html"),
            "inline; filename=\"report.html\""
        );
        let odd = disposition("a\"b\r\nc\u{e9}.md");
        assert!(HeaderValue::from_str(&odd).is_ok());
        assert_eq!(odd, "inline; filename=\"a_b__c_.md\"");
        assert_eq!(disposition(""), "inline; filename=\"artifact\"");
    }
}
