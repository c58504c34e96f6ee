//! The suite's Markdown results: targets (latency rows flagged when taken on a saturated
//! machine), the cost per token against the minimal relay, scaling, streams and history.

use crate::cost::{ratio, saturated, verdict};

/// One repeat's figures, or their medians, by name (the suite fills them, the table shows them).
pub type Figures = std::collections::BTreeMap<String, f64>;

/// The Markdown results: targets, scaling, history.
pub fn table(m: &Figures, repeat: usize, quick: bool) -> String {
    let g = |k: &str| m.get(k).copied().unwrap_or(f64::NAN);
    let mark = |ok: bool| if ok { "✓" } else { "✗ missed" };
    let busy = |k: &str| {
        m.get(&format!("{k}_machine_busy_pct"))
            .copied()
            .unwrap_or(0.0)
    };
    let mut s = String::new();
    s.push_str(&format!(
        "Medians of {repeat} repeat(s){}.\n\n| measure | target | measured | |\n|---|---|---|---|\n",
        if quick { " (--quick)" } else { "" }
    ));
    let (p50, p99) = (g("overhead_native_ms_p50"), g("overhead_native_ms_p99"));
    s.push_str(&format!(
        "| server overhead per tool iteration, native, p50 / p99 | < 0.5 / < 5 ms | {p50:.3} / {p99:.3} ms | {} |\n",
        verdict(p50 < 0.5 && p99 < 5.0, busy("overhead_native"))
    ));
    let (p50, p99) = (g("overhead_json_ms_p50"), g("overhead_json_ms_p99"));
    s.push_str(&format!(
        "| server overhead per tool iteration, JSON mode, p50 / p99 | < 0.5 / < 5 ms | {p50:.3} / {p99:.3} ms | {} |\n",
        verdict(p50 < 0.5 && p99 < 5.0, busy("overhead_json"))
    ));
    let n = if quick { 100 } else { 1000 };
    let (p50, p99) = (
        g(&format!("scale_{n}_token_ms_p50")),
        g(&format!("scale_{n}_token_ms_p99")),
    );
    s.push_str(&format!(
        "| token chunk → SSE event at {n} concurrent streams, p50 / p99 | < 1 / < 10 ms | {p50:.3} / {p99:.3} ms | {} |\n",
        verdict(p50 < 1.0 && p99 < 10.0, busy(&format!("scale_{n}")))
    ));
    let (p50, p99) = (g("streams_20_token_ms_p50"), g("streams_20_token_ms_p99"));
    s.push_str(&format!(
        "| same, all {n} streaming at once at 20 tokens/s each (steady state) | < 0.5 / < 5 ms | {p50:.3} / {p99:.3} ms | {} |\n",
        verdict(p50 < 0.5 && p99 < 5.0, busy("streams_20"))
    ));
    let (p50, p99) = (g("streams_50_token_ms_p50"), g("streams_50_token_ms_p99"));
    s.push_str(&format!(
        "| same, all {n} streaming at once at 50 tokens/s each (steady state) | < 1 / < 10 ms | {p50:.3} / {p99:.3} ms | {} |\n",
        verdict(p50 < 1.0 && p99 < 10.0, busy("streams_50"))
    ));
    s.push_str(&cost_row(m));
    let n = if quick { 100 } else { 2000 };
    let (active, errors) = (
        g(&format!("scale_{n}_peak_active")),
        g(&format!("scale_{n}_errors")),
    );
    s.push_str(&format!(
        "| concurrent active runs held, zero errors / lost events | ≥ 2000 | {active:.0} held (of {n}), {errors:.0} errors | {} |\n",
        mark(active >= 2000.0 && errors == 0.0)
    ));
    let per_run = g(&format!("scale_{n}_rss_per_run_kib"));
    s.push_str(&format!(
        "| resident memory per active run at that load | ≤ 40 KB | {:.1} KB | {} |\n",
        per_run * 1.024,
        mark(per_run * 1.024 <= 40.0)
    ));
    let rps = g("throughput_runs_per_s");
    s.push_str(&format!(
        "| completed short runs per second (SQLite) | ≥ 2500 | {rps:.0} | {} |\n",
        mark(rps >= 2500.0)
    ));
    let (ready, idle) = (g("startup_ready_ms"), g("startup_idle_rss_kib") / 1024.0);
    s.push_str(&format!(
        "| start-up to /readyz 200 (existing database); idle RSS | < 200 ms; < 30 MB | {ready:.0} ms; {:.1} MB | {} |\n",
        idle * 1.048576,
        mark(ready < 200.0 && idle * 1.048576 < 30.0)
    ));
    s.push_str("\n| concurrent runs | run p50 / p99 (ms) | first event p50 / p99 (ms) | token → SSE p50 / p99 (ms) | peak active | RSS per run (KiB) | server CPU (% of a core) | machine busy (% of all cores) | errors |\n|---|---|---|---|---|---|---|---|---|\n");
    for n in [10, 100, 1000, 2000] {
        let k = format!("scale_{n}");
        if !m.contains_key(&format!("{k}_errors")) {
            continue;
        }
        let token = flagged(
            format!(
                "{:.3} / {:.3}",
                g(&format!("{k}_token_ms_p50")),
                g(&format!("{k}_token_ms_p99"))
            ),
            busy(&k),
        );
        s.push_str(&format!(
            "| {n} | {:.0} / {:.0} | {:.1} / {:.1} | {token} | {:.0} | {:.1} | {:.0} | {:.0} | {:.0} |\n",
            g(&format!("{k}_run_ms_p50")), g(&format!("{k}_run_ms_p99")),
            g(&format!("{k}_ttfe_ms_p50")), g(&format!("{k}_ttfe_ms_p99")),
            g(&format!("{k}_peak_active")), g(&format!("{k}_rss_per_run_kib")),
            g(&format!("{k}_cpu_pct")), g(&format!("{k}_machine_busy_pct")),
            g(&format!("{k}_errors")),
        ));
    }
    s.push_str("\n| streams at once | tokens/s each | token → SSE p50 / p99 (ms) | all-streaming window (s) | server CPU (% of a core) | machine busy (% of all cores) |\n|---|---|---|---|---|---|\n");
    for rate in [10, 20, 50] {
        let k = format!("streams_{rate}");
        if !m.contains_key(&format!("{k}_errors")) {
            continue;
        }
        let window = if g(&format!("{k}_saturated")) > 0.5 {
            "none: saturated (every token counted)".to_string()
        } else {
            format!("{:.1}", g(&format!("{k}_plateau_s")))
        };
        let token = flagged(
            format!(
                "{:.3} / {:.3}",
                g(&format!("{k}_token_ms_p50")),
                g(&format!("{k}_token_ms_p99"))
            ),
            busy(&k),
        );
        s.push_str(&format!(
            "| {} | {rate} | {token} | {window} | {:.0} | {:.0} |\n",
            if quick { 100 } else { 1000 },
            g(&format!("{k}_cpu_pct")),
            g(&format!("{k}_machine_busy_pct")),
        ));
    }
    if m.contains_key("floor_token_ms_p50") {
        s.push_str(&format!(
            "| {} (mock → client, no reagent) | 50 | {:.3} / {:.3} | | | |\n",
            if quick { 100 } else { 1000 },
            g("floor_token_ms_p50"),
            g("floor_token_ms_p99"),
        ));
    }
    s.push_str("\n| history (messages) | mock round trip (ms) | overhead per iteration p50 / p99 (ms) |\n|---|---|---|\n");
    for h in [10, 100, 1000] {
        if !m.contains_key(&format!("history_{h}_mock_rtt_ms")) {
            continue;
        }
        s.push_str(&format!(
            "| {h} | {:.3} | {:.3} / {:.3} |\n",
            g(&format!("history_{h}_mock_rtt_ms")),
            g(&format!("history_{h}_overhead_ms_p50")),
            g(&format!("history_{h}_overhead_ms_p99")),
        ));
    }
    s
}

/// Server CPU per streamed token at 20 tokens/s against the minimal relay's on the same load.
fn cost_row(m: &Figures) -> String {
    let get = |k: &str| m.get(k).copied();
    let (server, relay) = (
        get("streams_20_cpu_us_per_token"),
        get("relay_20_cpu_us_per_token"),
    );
    let per_run = get("streams_20_cpu_us_per_run").unwrap_or(f64::NAN);
    match ratio(server, relay) {
        Some(r) => format!(
            "| server CPU per streamed answer token (all threads), 20 tokens/s; per run | ≤ 1.5× the minimal relay's | {:.1} µs = {r:.2}× the relay's {:.1} µs; {:.0} µs per run | {} |\n",
            server.unwrap_or(f64::NAN),
            relay.unwrap_or(f64::NAN),
            per_run,
            if r <= 1.5 { "✓" } else { "✗ missed" }
        ),
        None => "| server CPU per streamed answer token | ≤ 1.5× the minimal relay's | not measured | |\n".into(),
    }
}

/// Marks a latency cell taken on a saturated machine (see [`crate::cost::SATURATED_BUSY_PCT`]).
fn flagged(cell: String, busy_pct: f64) -> String {
    if saturated(busy_pct) {
        format!("{cell} ⚠ saturated ({busy_pct:.0} % busy)")
    } else {
        cell
    }
}

#[cfg(test)]
mod tests;
