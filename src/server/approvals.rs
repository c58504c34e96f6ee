//! Approvals (SPEC §3.6): a reviewer answers a paused tool call. The broker knows the request's
//! run; the run's owner must be the caller, otherwise the approval does not exist for them
//! (404, like every other tenant boundary).

use axum::extract::State;
use axum::{Extension, Json};
use serde::Deserialize;
use serde_json::{json, Value};
use utoipa::ToSchema;
use uuid::Uuid;

use super::error::{ApiError, ApiJson, ApiPath};
use super::runs::check_storable;
use super::{AppState, Owner};
use crate::agent::hooks::approval::ApprovalInfo;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DecideBody {
    pub approve: bool,
    pub reason: Option<String>,
}

/// True when the approval's run belongs to `owner`.
async fn belongs_to(
    state: &AppState,
    owner: &Owner,
    info: &ApprovalInfo,
) -> Result<bool, ApiError> {
    let Ok(run_id) = Uuid::parse_str(&info.run_id) else {
        return Ok(false);
    };
    Ok(state.store.get_run(&owner.0, run_id).await?.is_some())
}

#[utoipa::path(get, path = "/api/approvals", tag = "approvals", operation_id = "list_approvals",
    responses((status = 200, description = "The caller's pending approvals", body = Value)))]
pub async fn list(
    State(state): State<AppState>,
    Extension(owner): Extension<Owner>,
) -> Result<Json<Value>, ApiError> {
    let mut items = Vec::new();
    for (id, info) in state.approvals.list() {
        if belongs_to(&state, &owner, &info).await? {
            items.push(json!({
                "id": id,
                "run_id": info.run_id,
                "conversation_id": info.conversation_id,
                "tool": info.tool,
                "arguments": info.arguments,
                "requested_at": info.requested_at,
            }));
        }
    }
    Ok(Json(Value::Array(items)))
}

#[utoipa::path(post, path = "/api/approvals/{id}", tag = "approvals",
    params(("id" = Uuid, Path, description = "The `approval_id` of the `approval_required` step")),
    request_body = DecideBody,
    responses((status = 200, description = "Decision delivered; the run resumes", body = Value),
              (status = 404, description = "Unknown, already decided, timed out or another tenant's")))]
pub async fn decide(
    State(state): State<AppState>,
    Extension(owner): Extension<Owner>,
    ApiPath(id): ApiPath<Uuid>,
    ApiJson(body): ApiJson<DecideBody>,
) -> Result<Json<Value>, ApiError> {
    check_storable("reason", body.reason.as_deref().unwrap_or_default())?;
    let info = state.approvals.get(id).ok_or(ApiError::NotFound)?;
    if !belongs_to(&state, &owner, &info).await? {
        return Err(ApiError::NotFound);
    }
    state
        .approvals
        .decide(id, body.approve, body.reason)
        .map_err(|_| ApiError::NotFound)?;
    tracing::info!(approval_id = %id, run_id = %info.run_id, approve = body.approve, "approval decided");
    Ok(Json(json!({"id": id, "approved": body.approve})))
}
