//! What a batch of bookings does to the budget windows, worked out in memory between reading the
//! windows' rows (locked: `FOR UPDATE` on PostgreSQL, the one writer on SQLite) and writing them
//! back: the settlements' spend and the released holds first (they always apply), then each
//! reservation in the batch's order against the totals so far, so that a batch admits exactly
//! what the same bookings written one after the other (settlements first) would. Also the hold
//! rows' window lists.

use std::collections::BTreeMap;

use super::{Hold, WindowLimit, WindowSpend};

/// A window row: tenant, kind, start (µs). Ordered as every writer locks the rows, so two
/// writers never wait on each other.
pub(in crate::store) type WindowKey = (String, String, i64);

/// A window as read, with its tenant.
#[derive(Clone, Debug, PartialEq, Eq, sqlx::FromRow)]
pub(in crate::store) struct WindowRow {
    pub tenant: String,
    #[sqlx(flatten)]
    pub spend: WindowSpend,
}

/// One window's change: [`WindowKey`] then the deltas of spent tokens, spent nanos, reserved
/// tokens and reserved nanos.
pub(in crate::store) type WindowDelta = (WindowKey, [i64; 4]);

/// The windows of a batch: as read, and with the batch applied so far.
#[derive(Debug, Default)]
pub(in crate::store) struct Tally {
    before: BTreeMap<WindowKey, WindowSpend>,
    now: BTreeMap<WindowKey, WindowSpend>,
}

impl Tally {
    /// The windows as read from the database (every window the batch touches).
    pub fn new(rows: Vec<WindowRow>) -> Self {
        let before: BTreeMap<WindowKey, WindowSpend> = rows
            .into_iter()
            .map(|r| {
                let key = (r.tenant, r.spend.window_kind.clone(), r.spend.starts_at);
                (key, r.spend)
            })
            .collect();
        Self {
            now: before.clone(),
            before,
        }
    }

    fn window(&mut self, tenant: &str, kind: &str, starts_at: i64) -> Option<&mut WindowSpend> {
        self.now
            .get_mut(&(tenant.to_string(), kind.to_string(), starts_at))
    }

    /// A settled call's spend, in every window its hold reserved in.
    pub fn spend(&mut self, hold: &Hold, tokens: i64, nanos: i64) {
        for (kind, starts_at) in &hold.windows {
            if let Some(w) = self.window(&hold.tenant, kind, *starts_at) {
                w.spent_tokens = w.spent_tokens.saturating_add(tokens);
                w.spent_nanos = w.spent_nanos.saturating_add(nanos);
            }
        }
    }

    /// A deleted hold's reservation given back.
    pub fn release(&mut self, tenant: &str, windows: &[(String, i64)], tokens: i64, nanos: i64) {
        for (kind, starts_at) in windows {
            if let Some(w) = self.window(tenant, kind, *starts_at) {
                w.reserved_tokens = w.reserved_tokens.saturating_sub(tokens);
                w.reserved_nanos = w.reserved_nanos.saturating_sub(nanos);
            }
        }
    }

    /// Takes `tokens` and `nanos` in every window of `limits` when each can take them
    /// (`spent + reserved + call <= limit`, after everything applied before); else nothing.
    pub fn admit(&mut self, tenant: &str, limits: &[WindowLimit], tokens: i64, nanos: i64) -> bool {
        let fits = |w: &WindowSpend, l: &WindowLimit| {
            let within = |spent: i64, reserved: i64, call: i64, limit: Option<i64>| {
                limit.is_none_or(|limit| {
                    i128::from(spent) + i128::from(reserved) + i128::from(call) <= i128::from(limit)
                })
            };
            within(w.spent_tokens, w.reserved_tokens, tokens, l.tokens)
                && within(w.spent_nanos, w.reserved_nanos, nanos, l.nanos)
        };
        for l in limits {
            match self.window(tenant, l.kind, l.starts_at) {
                Some(w) if fits(w, l) => {}
                _ => return false,
            }
        }
        for l in limits {
            if let Some(w) = self.window(tenant, l.kind, l.starts_at) {
                w.reserved_tokens = w.reserved_tokens.saturating_add(tokens);
                w.reserved_nanos = w.reserved_nanos.saturating_add(nanos);
            }
        }
        true
    }

    /// The windows that changed, with their deltas, in lock order.
    pub fn deltas(&self) -> Vec<WindowDelta> {
        self.now
            .iter()
            .filter_map(|(key, now)| {
                let before = self.before.get(key)?;
                let d = [
                    now.spent_tokens.saturating_sub(before.spent_tokens),
                    now.spent_nanos.saturating_sub(before.spent_nanos),
                    now.reserved_tokens.saturating_sub(before.reserved_tokens),
                    now.reserved_nanos.saturating_sub(before.reserved_nanos),
                ];
                (d != [0; 4]).then(|| (key.clone(), d))
            })
            .collect()
    }

    /// The totals of `keys` after the batch (the windows a booking of it touched).
    pub fn totals<'a>(&self, keys: impl IntoIterator<Item = &'a WindowKey>) -> Vec<WindowSpend> {
        let mut seen: Vec<&WindowKey> = keys.into_iter().collect();
        seen.sort_unstable();
        seen.dedup();
        seen.into_iter()
            .filter_map(|k| self.now.get(k).cloned())
            .collect()
    }
}

pub(in crate::store) fn encode_windows(windows: &[(String, i64)]) -> String {
    let parts: Vec<String> = windows.iter().map(|(k, s)| format!("{k}:{s}")).collect();
    parts.join(",")
}

pub(in crate::store) fn decode_windows(text: &str) -> Vec<(String, i64)> {
    text.split(',')
        .filter_map(|p| {
            let (k, s) = p.split_once(':')?;
            Some((k.to_string(), s.parse().ok()?))
        })
        .collect()
}
