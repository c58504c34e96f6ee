//! Operations and catalog (docs/api.md): liveness, readiness (`Store::readiness`), Prometheus
//! metrics, the tool and model catalogs (no secrets), and artifact downloads. Artifacts are
//! served as attachments-by-name with `nosniff`, and HTML under a `sandbox` CSP, because their
//! bytes come from arbitrary tools and must not run script in the service's origin.

use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use uuid::Uuid;

use super::auth::Owner;
use super::error::{ApiError, ApiPath};
use super::state::AppState;
use super::views::{ErrorBody, Health, Instance, Model, Ready, Tool};

#[utoipa::path(get, path = "/healthz", tag = "operations",
    summary = "Liveness",
    responses((status = 200, description = "The process serves requests", body = Health)))]
pub async fn healthz() -> Json<Health> {
    Json(Health {
        status: "ok".into(),
    })
}

#[utoipa::path(get, path = "/readyz", tag = "operations",
    summary = "Readiness: the database answers within 1 s and takes writes, and every required MCP server is ready",
    responses((status = 200, description = "Ready", body = Ready),
              (status = 503, description = "`unavailable`: the database is unreachable or does not answer within 1 s, its writes are failing (e.g. a full disk), its SQLite file was deleted, or a required MCP server is not ready; the message says which", body = ErrorBody)))]
pub async fn readyz(State(state): State<AppState>) -> Result<Json<Ready>, ApiError> {
    let waiting = state.mcp.required_not_ready();
    if !waiting.is_empty() {
        return Err(ApiError::Unavailable(format!(
            "required MCP servers not ready: {}",
            waiting.join(", ")
        )));
    }
    match state.store.readiness().await {
        Ok(()) => Ok(Json(Ready {
            status: "ready".into(),
            database: state.store.backend().into(),
        })),
        Err(problem) => Err(ApiError::Unavailable(problem)),
    }
}

#[utoipa::path(get, path = "/metrics", tag = "operations",
    summary = "Prometheus metrics",
    responses((status = 200, description = "Prometheus text format", body = String, content_type = "text/plain"),
              (status = 401, description = "`unauthorized`: a metrics key is configured and was not given", body = ErrorBody)))]
pub async fn metrics(State(state): State<AppState>, headers: HeaderMap) -> Response {
    if let Err(e) = state.auth.check_metrics(&headers) {
        return e.into_response();
    }
    for s in state.mcp.status() {
        state
            .metrics
            .mcp_server_up(&s.name, s.state == crate::tools::mcp::State::Ready);
    }
    state.metrics.leases(state.runs.lease_counts());
    match state.runs.tenants_over_warning().await {
        Ok(n) => state.metrics.tenants_over_budget_warning(n),
        Err(e) => tracing::warn!(error = %e, "cannot count the tenants past a budget warning"),
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

#[utoipa::path(get, path = "/api/instances", tag = "operations",
    summary = "The live instances sharing this database, with the runs each executes (docs/deployment.md)",
    description = "Instances heartbeat every `REAGENT_LEASE_RENEW_S`; one not seen for \
        `REAGENT_LEASE_TTL_S` is left out. Guarded like `/metrics`: by the metrics key when one is set.",
    responses((status = 200, description = "Live instances, by id", body = Vec<Instance>),
              (status = 401, description = "`unauthorized`: a metrics key is configured and was not given", body = ErrorBody),
              (status = 503, description = "`unavailable`: the database is unreachable", body = ErrorBody)))]
pub async fn instances(State(state): State<AppState>, headers: HeaderMap) -> Response {
    if let Err(e) = state.auth.check_metrics(&headers) {
        return e.into_response();
    }
    match state.store.instances(state.runs.settings().lease.ttl).await {
        Ok(rows) => Json(rows.into_iter().map(Instance::from).collect::<Vec<_>>()).into_response(),
        Err(e) => {
            tracing::warn!(error = %e, "could not list the instances");
            ApiError::Unavailable("database unreachable".into()).into_response()
        }
    }
}

#[utoipa::path(get, path = "/api/tools", tag = "catalog",
    summary = "The tool catalog",
    responses((status = 200, description = "Every configured tool", body = Vec<Tool>)))]
pub async fn tools(State(state): State<AppState>) -> Json<Vec<Tool>> {
    Json(
        state
            .runs
            .tools()
            .iter()
            .map(|t| Tool {
                name: t.name().to_string(),
                description: t.description().to_string(),
                parameters: t.parameters(),
                source: t.source(),
                server: t.server().map(str::to_string),
            })
            .collect(),
    )
}

#[utoipa::path(get, path = "/api/models", tag = "catalog",
    summary = "The model catalog (no URLs, no keys)",
    responses((status = 200, description = "Every configured model; one is the default", body = Vec<Model>)))]
pub async fn models(State(state): State<AppState>) -> Json<Vec<Model>> {
    Json(state.models.infos().into_iter().map(Model::from).collect())
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
    summary = "An artifact's bytes",
    responses((status = 200, description = "The artifact bytes, with their own content type (`nosniff`; HTML under a `sandbox` CSP)", body = String, content_type = "*/*")))]
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
