//! Approvals (docs/api.md): a reviewer answers a paused tool call. The run manager knows the
//! request's run; the run's owner must be the caller, otherwise the approval does not exist for
//! them (404, like every other tenant boundary).

use axum::extract::State;
use axum::{Extension, Json};
use serde::Deserialize;
use utoipa::ToSchema;
use uuid::Uuid;

use super::auth::Owner;
use super::error::{ApiError, ApiJson, ApiPath};
use super::state::AppState;
use super::views::{Approval, Decided, ErrorBody};

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DecideBody {
    pub approve: bool,
    pub reason: Option<String>,
}

#[utoipa::path(get, path = "/api/approvals", tag = "approvals", operation_id = "list_approvals",
    summary = "The caller's pending approvals",
    responses((status = 200, description = "Tool calls waiting for a reviewer", body = Vec<Approval>)))]
pub async fn list(
    State(state): State<AppState>,
    Extension(owner): Extension<Owner>,
) -> Result<Json<Vec<Approval>>, ApiError> {
    let items = state.runs.approvals_of(&owner.0).await?;
    Ok(Json(items.into_iter().map(Approval::from).collect()))
}

#[utoipa::path(post, path = "/api/approvals/{id}", tag = "approvals",
    params(("id" = Uuid, Path, description = "The `approval_id` of the `approval_required` step")),
    summary = "Approve or reject a paused tool call",
    request_body = DecideBody,
    responses((status = 200, description = "Decision delivered; the run resumes", body = Decided),
              (status = 404, description = "`not_found`: unknown, already decided, timed out or another tenant's", body = ErrorBody)))]
pub async fn decide(
    State(state): State<AppState>,
    Extension(owner): Extension<Owner>,
    ApiPath(id): ApiPath<Uuid>,
    ApiJson(body): ApiJson<DecideBody>,
) -> Result<Json<Decided>, ApiError> {
    state
        .runs
        .decide_approval(&owner.0, id, body.approve, body.reason)
        .await?;
    Ok(Json(Decided {
        id,
        approved: body.approve,
    }))
}
