//! Approvals (SPEC §3.6): a reviewer answers a paused tool call. The run manager knows the
//! request's run; the run's owner must be the caller, otherwise the approval does not exist for
//! them (404, like every other tenant boundary).

use axum::extract::State;
use axum::{Extension, Json};
use serde::Deserialize;
use serde_json::{json, Value};
use utoipa::ToSchema;
use uuid::Uuid;

use super::auth::Owner;
use super::error::{ApiError, ApiJson, ApiPath};
use super::state::AppState;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DecideBody {
    pub approve: bool,
    pub reason: Option<String>,
}

#[utoipa::path(get, path = "/api/approvals", tag = "approvals", operation_id = "list_approvals",
    responses((status = 200, description = "The caller's pending approvals", body = Value)))]
pub async fn list(
    State(state): State<AppState>,
    Extension(owner): Extension<Owner>,
) -> Result<Json<Value>, ApiError> {
    let items = state
        .runs
        .approvals_of(&owner.0)
        .into_iter()
        .map(|(id, info)| {
            json!({
                "id": id,
                "run_id": info.run_id,
                "conversation_id": info.conversation_id,
                "tool": info.tool,
                "arguments": info.arguments,
                "requested_at": info.requested_at,
            })
        })
        .collect();
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
    state
        .runs
        .decide_approval(&owner.0, id, body.approve, body.reason)?;
    Ok(Json(json!({"id": id, "approved": body.approve})))
}
