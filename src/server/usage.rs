//! `GET /api/usage` (docs/api.md): the caller's tokens, cache tokens, LLM calls, runs and cost
//! per day, model or agent over a time range, with each of its budgets' current window, spend
//! and what remains. With the metrics key, `group_by=tenant` sums every tenant. Outside `/api`'s
//! key layer, since either an API key or the metrics key may call it.

use axum::extract::State;
use axum::http::HeaderMap;
use axum::Json;
use chrono::{DateTime, Duration, NaiveDate, Utc};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::error::{ApiError, ApiQuery};
use super::state::AppState;
use crate::domain::Cost;
use crate::llm::MAX_COUNT;
use crate::store::{UsageGroup, UsageRow};

/// Days reported when `from` is absent.
const DEFAULT_DAYS: i64 = 30;

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct UsageParams {
    /// Start (inclusive): an RFC 3339 time or a date (`2026-12-01`, UTC midnight); 30 days
    /// before `to` when absent.
    pub from: Option<String>,
    /// End (exclusive): an RFC 3339 time or a date; now when absent.
    pub to: Option<String>,
    /// `day` (the default), `model`, `agent`, or `tenant` (the metrics key only).
    #[param(pattern = "^(day|model|agent|tenant)$")]
    pub group_by: Option<String>,
}

/// One group's sums.
#[derive(Debug, Serialize, ToSchema)]
pub struct UsageGroupRow {
    /// The day (`2026-12-04`), model, agent or tenant.
    pub key: String,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub total_tokens: u64,
    pub cache_read_tokens: u64,
    pub cache_write_tokens: u64,
    pub llm_calls: u64,
    pub runs: u64,
    pub cost_usd: f64,
    /// Calls of models without a price: their cost is not in `cost_usd`.
    pub unpriced_calls: u64,
    /// Calls whose provider reported no usage: counted at reagent's estimate.
    pub estimated_calls: u64,
}

/// One budget of the caller, in its current window.
#[derive(Debug, Serialize, ToSchema)]
pub struct BudgetUsage {
    /// The budget's `tenant`: the caller's key name, or `*`.
    pub tenant: String,
    /// `day`, `week` or `month` (UTC calendar windows).
    pub window: String,
    pub window_start: DateTime<Utc>,
    pub window_end: DateTime<Utc>,
    #[schema(required)]
    pub tokens: Option<u64>,
    #[schema(required)]
    pub cost_usd: Option<f64>,
    pub spent_tokens: u64,
    pub spent_cost_usd: f64,
    /// Held by calls in flight.
    pub reserved_tokens: u64,
    pub reserved_cost_usd: f64,
    #[schema(required)]
    pub remaining_tokens: Option<u64>,
    #[schema(required)]
    pub remaining_cost_usd: Option<f64>,
    pub warn_at_percent: u8,
    /// New runs are refused (429 `budget_exceeded`): what the window's spend leaves cannot take
    /// one call of the default model (its `max_output_tokens`, priced), however much remains.
    pub exhausted: bool,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct UsageReport {
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
    pub group_by: String,
    pub groups: Vec<UsageGroupRow>,
    /// The caller's budgets (none for `group_by=tenant`).
    pub budgets: Vec<BudgetUsage>,
}

fn when(key: &str, raw: &str) -> Result<DateTime<Utc>, ApiError> {
    if let Ok(t) = DateTime::parse_from_rfc3339(raw) {
        return Ok(t.with_timezone(&Utc));
    }
    NaiveDate::parse_from_str(raw, "%Y-%m-%d")
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|t| t.and_utc())
        .ok_or_else(|| ApiError::invalid(format!("{key} must be an RFC 3339 time or a date")))
}

fn group(raw: Option<&str>) -> Result<UsageGroup, ApiError> {
    match raw.unwrap_or("day") {
        "day" => Ok(UsageGroup::Day),
        "model" => Ok(UsageGroup::Model),
        "agent" => Ok(UsageGroup::Agent),
        "tenant" => Ok(UsageGroup::Tenant),
        _ => Err(ApiError::invalid(
            "group_by must be day, model, agent or tenant",
        )),
    }
}

fn u(v: i64) -> u64 {
    v.max(0).unsigned_abs()
}

fn usd(nanos: i64) -> f64 {
    Cost::from_nanos(u(nanos)).usd()
}

impl UsageGroupRow {
    fn of(r: UsageRow, group: UsageGroup) -> Self {
        let key = match group {
            UsageGroup::Day => r
                .key
                .parse::<i64>()
                .ok()
                .and_then(|d| DateTime::from_timestamp(d * 86_400, 0))
                .map_or(r.key.clone(), |t| t.format("%Y-%m-%d").to_string()),
            _ => r.key,
        };
        Self {
            key,
            prompt_tokens: u(r.prompt_tokens),
            completion_tokens: u(r.completion_tokens),
            total_tokens: u(r.prompt_tokens)
                .saturating_add(u(r.completion_tokens))
                .min(MAX_COUNT),
            cache_read_tokens: u(r.cache_read_tokens),
            cache_write_tokens: u(r.cache_write_tokens),
            llm_calls: u(r.llm_calls),
            runs: u(r.runs),
            cost_usd: usd(r.cost_nanos),
            unpriced_calls: u(r.unpriced_calls),
            estimated_calls: u(r.estimated_calls),
        }
    }
}

#[utoipa::path(get, path = "/api/usage", tag = "operations",
    summary = "The caller's usage and cost per day, model or agent, and its budgets",
    description = "Needs an API key (when auth is on); `group_by=tenant` needs the metrics key \
        instead and sums every tenant.",
    params(UsageParams),
    responses((status = 200, description = "Sums per group, ordered by key, and the caller's budgets now", body = UsageReport),
              (status = 400, description = "`invalid_request`: a malformed time or group", body = super::views::ErrorBody),
              (status = 401, description = "`unauthorized`: no valid key (or not the metrics key for `group_by=tenant`)", body = super::views::ErrorBody)))]
pub async fn usage(
    State(state): State<AppState>,
    headers: HeaderMap,
    ApiQuery(params): ApiQuery<UsageParams>,
) -> Result<Json<UsageReport>, ApiError> {
    let group = group(params.group_by.as_deref())?;
    let tenant = if group == UsageGroup::Tenant {
        // Every tenant's spend: for operators only.
        if state.auth.enabled() && !state.auth.has_metrics_key() {
            return Err(ApiError::Unauthorized);
        }
        state.auth.check_metrics(&headers)?;
        None
    } else {
        let owner = state.auth.authenticate(&headers)?;
        state.auth.admit(&owner)?;
        Some(owner.0)
    };
    let to = match params.to.as_deref() {
        Some(raw) => when("to", raw)?,
        None => Utc::now(),
    };
    let from = match params.from.as_deref() {
        Some(raw) => when("from", raw)?,
        None => to - Duration::days(DEFAULT_DAYS),
    };
    let rows = state
        .store
        .usage(
            tenant.as_deref(),
            from.timestamp_micros(),
            to.timestamp_micros(),
            group,
        )
        .await?;
    let budgets = match &tenant {
        Some(t) => budgets(&state, t).await?,
        None => Vec::new(),
    };
    Ok(Json(UsageReport {
        from,
        to,
        group_by: params.group_by.unwrap_or_else(|| "day".into()),
        groups: rows
            .into_iter()
            .map(|r| UsageGroupRow::of(r, group))
            .collect(),
        budgets,
    }))
}

async fn budgets(state: &AppState, tenant: &str) -> Result<Vec<BudgetUsage>, ApiError> {
    let status = state.runs.budget_status(tenant).await?;
    Ok(status
        .into_iter()
        .map(|(rule, start, end, s, exhausted)| {
            let limit_nanos = rule.cost_usd.map(|c| Cost::from_usd(c).nanos());
            let used_tokens = u(s.spent_tokens).saturating_add(u(s.reserved_tokens));
            let used_nanos = u(s.spent_nanos).saturating_add(u(s.reserved_nanos));
            BudgetUsage {
                tenant: rule.tenant.clone(),
                window: rule.window.as_str().into(),
                window_start: start,
                window_end: end,
                tokens: rule.tokens,
                cost_usd: rule.cost_usd,
                spent_tokens: u(s.spent_tokens),
                spent_cost_usd: usd(s.spent_nanos),
                reserved_tokens: u(s.reserved_tokens),
                reserved_cost_usd: usd(s.reserved_nanos),
                remaining_tokens: rule.tokens.map(|t| t.saturating_sub(used_tokens)),
                remaining_cost_usd: limit_nanos
                    .map(|n| Cost::from_nanos(n.saturating_sub(used_nanos)).usd()),
                warn_at_percent: rule.warn_at_percent,
                exhausted,
            }
        })
        .collect())
}
