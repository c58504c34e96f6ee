//! What a load cost the process under test: CPU per streamed token and per run, the ratio to
//! the minimal relay's (the token path's floor on this machine, [`crate::relay`]), and whether
//! a latency figure was taken on a saturated machine (then it measures queues, not a path).

/// At or above this share of all cores busy, a latency figure is flagged instead of reported.
pub const SATURATED_BUSY_PCT: f64 = 90.0;

/// True when a figure taken with the machine `busy_pct` busy measures the machine's queues.
pub fn saturated(busy_pct: f64) -> bool {
    busy_pct >= SATURATED_BUSY_PCT
}

/// CPU microseconds per unit (`None` when nothing was counted).
pub fn us_per(cpu_s: f64, count: usize) -> Option<f64> {
    (count > 0 && cpu_s.is_finite()).then(|| cpu_s * 1e6 / count as f64)
}

/// `server / relay` (`None` unless both are known and the relay's cost is positive).
pub fn ratio(server: Option<f64>, relay: Option<f64>) -> Option<f64> {
    match (server, relay) {
        (Some(s), Some(r)) if r > 0.0 && s.is_finite() => Some(s / r),
        _ => None,
    }
}

/// `12.3 µs` or `n/a`.
pub fn show_us(v: Option<f64>) -> String {
    v.map_or_else(|| "n/a".into(), |v| format!("{v:.1} µs"))
}

/// The verdict cell of a latency row: the figure is no result when the machine was saturated.
pub fn verdict(ok: bool, busy_pct: f64) -> String {
    if saturated(busy_pct) {
        format!("⚠ saturated (machine {busy_pct:.0} % busy): not a result")
    } else if ok {
        "✓".into()
    } else {
        "✗ missed".into()
    }
}

#[cfg(test)]
mod tests;
