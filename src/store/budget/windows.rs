//! What one booking does to the budget windows: the SQL of the one statement per window, the
//! hold rows' window lists, and the plan that sums a booking's settlements, releases and
//! reservation per window, in the one order every writer locks windows in.

use std::collections::BTreeMap;

use super::{Reservation, Settlement};

/// The one write per window of a booking. Binds: tenant, kind, starts_at, spent tokens, spent
/// nanos, reserved tokens, reserved nanos, released tokens, released nanos, token limit, nano
/// limit (`NULL`: no limit; a settlement alone has none, it always applies). A window's first
/// booking inserts its row (if it fits at all); later ones add the spend, give back the
/// released reservations and add the new one, only while spent + reserved stays within each
/// limit, which PostgreSQL re-checks on the latest row version after waiting for a concurrent
/// writer's lock. No row back: the reservation did not fit, nothing changed.
pub(super) const BOOK_SQL: &str = "INSERT INTO budget_windows \
     (tenant, window_kind, starts_at, spent_tokens, spent_nanos, reserved_tokens, reserved_nanos) \
     SELECT $1, $2, $3, $4, $5, $6, $7 \
     WHERE ($10 IS NULL OR $4 + $6 <= $10) AND ($11 IS NULL OR $5 + $7 <= $11) \
     ON CONFLICT (tenant, window_kind, starts_at) DO UPDATE SET \
     spent_tokens = budget_windows.spent_tokens + excluded.spent_tokens, \
     spent_nanos = budget_windows.spent_nanos + excluded.spent_nanos, \
     reserved_tokens = budget_windows.reserved_tokens - $8 + excluded.reserved_tokens, \
     reserved_nanos = budget_windows.reserved_nanos - $9 + excluded.reserved_nanos \
     WHERE ($10 IS NULL OR budget_windows.spent_tokens + budget_windows.reserved_tokens \
     + excluded.spent_tokens - $8 + excluded.reserved_tokens <= $10) \
     AND ($11 IS NULL OR budget_windows.spent_nanos + budget_windows.reserved_nanos \
     + excluded.spent_nanos - $9 + excluded.reserved_nanos <= $11) \
     RETURNING window_kind, starts_at, spent_tokens, spent_nanos, reserved_tokens, \
     reserved_nanos, warned";

/// The usage ledger's columns, in the order [`Settlement`]s are bound.
pub(super) const USAGE_INSERT: &str = "INSERT INTO llm_usage (tenant, at, run_id, model, agent, \
     prompt_tokens, completion_tokens, cost_nanos, unpriced, cache_read_tokens, \
     cache_write_tokens, estimated) ";

pub(super) fn encode_windows(windows: &[(String, i64)]) -> String {
    let parts: Vec<String> = windows.iter().map(|(k, s)| format!("{k}:{s}")).collect();
    parts.join(",")
}

pub(super) fn decode_windows(text: &str) -> Vec<(String, i64)> {
    text.split(',')
        .filter_map(|p| {
            let (k, s) = p.split_once(':')?;
            Some((k.to_string(), s.parse().ok()?))
        })
        .collect()
}

/// A hold deleted by a booking (its reservation goes back): tenant, windows, tokens, nanos.
pub(super) type Released = (String, String, i64, i64);

/// One window's share of a booking: one [`BOOK_SQL`] statement.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct WindowOp {
    pub tenant: String,
    pub kind: String,
    pub starts_at: i64,
    pub spent_tokens: i64,
    pub spent_nanos: i64,
    pub reserve_tokens: i64,
    pub reserve_nanos: i64,
    pub release_tokens: i64,
    pub release_nanos: i64,
    pub limit_tokens: Option<i64>,
    pub limit_nanos: Option<i64>,
}

/// Day, week, month: the order a call's windows are reserved in.
fn rank(kind: &str) -> u8 {
    match kind {
        "day" => 0,
        "week" => 1,
        "month" => 2,
        _ => 3,
    }
}

type Ops = BTreeMap<(String, u8, i64, String), WindowOp>;

/// The (zero) op of a window, added in its place.
fn op<'a>(ops: &'a mut Ops, tenant: &str, kind: &str, starts_at: i64) -> &'a mut WindowOp {
    let key = (tenant.to_string(), rank(kind), starts_at, kind.to_string());
    ops.entry(key).or_insert_with(|| WindowOp {
        tenant: tenant.to_string(),
        kind: kind.to_string(),
        starts_at,
        ..WindowOp::default()
    })
}

/// The statements of a booking, one per window, sorted by (tenant, day/week/month, start):
/// every writer takes the window rows' locks in this order, so two never wait on each other.
/// `held`: the ids of the settlements' holds this booking deleted (the others were released
/// already, by recovery: only their spend is added); `released`: the run's other holds,
/// deleted at its end.
pub(super) fn window_ops(
    settle: &[Settlement],
    held: &[String],
    released: &[Released],
    reserve: Option<&Reservation<'_>>,
) -> Vec<WindowOp> {
    let mut ops: Ops = BTreeMap::new();
    for s in settle {
        let Some(h) = &s.hold else { continue };
        let still_held = held.iter().any(|id| *id == h.id.to_string());
        let spent = s
            .usage
            .prompt_tokens
            .saturating_add(s.usage.completion_tokens);
        for (kind, starts_at) in &h.windows {
            let o = op(&mut ops, &h.tenant, kind, *starts_at);
            o.spent_tokens = o.spent_tokens.saturating_add(spent);
            o.spent_nanos = o.spent_nanos.saturating_add(s.usage.cost_nanos);
            if still_held {
                o.release_tokens = o.release_tokens.saturating_add(h.tokens);
                o.release_nanos = o.release_nanos.saturating_add(h.nanos);
            }
        }
    }
    for (tenant, windows, tokens, nanos) in released {
        for (kind, starts_at) in decode_windows(windows) {
            let o = op(&mut ops, tenant, &kind, starts_at);
            o.release_tokens = o.release_tokens.saturating_add(*tokens);
            o.release_nanos = o.release_nanos.saturating_add(*nanos);
        }
    }
    if let Some(r) = reserve {
        for w in r.windows {
            let o = op(&mut ops, r.tenant, w.kind, w.starts_at);
            o.reserve_tokens = r.tokens;
            o.reserve_nanos = r.nanos;
            o.limit_tokens = w.tokens;
            o.limit_nanos = w.nanos;
        }
    }
    ops.into_values().collect()
}
