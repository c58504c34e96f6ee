//! The suite's Markdown results: targets (latency rows flagged when taken on a saturated
//! machine), the cost per token against the minimal relay, scaling, streams and history.

use crate::cost::{ratio, saturated, verdict};

/// One repeat's figures, or their medians, by name (the suite fills them, the table shows them).
pub type Figures = std::collections::BTreeMap<String, f64>;

/// The Markdown results: targets, scaling, history.
pub fn table(m: &Figures, repeat: usize, quick: bool) -> String {
    let view = View { m, quick };
    let mut s = String::new();
    s.push_str(&format!(
        "Medians of {repeat} repeat(s){}.\n\n| measure | target | measured | |\n|---|---|---|---|\n",
        if quick { " (--quick)" } else { "" }
    ));
    s.push_str(&view.latency_targets());
    s.push_str(&cost_row(m));
    s.push_str(&view.capacity_targets());
    s.push_str(&view.scaling());
    s.push_str(&view.streams());
    s.push_str(&view.history());
    s
}

/// The figures as the table reads them: a missing one is NaN, so its cell shows it missing.
struct View<'a> {
    m: &'a Figures,
    quick: bool,
}

impl View<'_> {
    fn g(&self, k: &str) -> f64 {
        self.m.get(k).copied().unwrap_or(f64::NAN)
    }

    /// The machine's busy share while scenario `k` ran (0 when not measured).
    fn busy(&self, k: &str) -> f64 {
        self.m
            .get(&format!("{k}_machine_busy_pct"))
            .copied()
            .unwrap_or(0.0)
    }

    fn has(&self, k: &str) -> bool {
        self.m.contains_key(k)
    }

    /// How many streams the scaling and streams scenarios held at once.
    fn streams_n(&self) -> usize {
        if self.quick {
            100
        } else {
            1000
        }
    }

    /// A target row of `{figure}_ms_p50` / `_p99` against `limits`, judged on scenario `busy`.
    fn latency_row(
        &self,
        measure: &str,
        target: &str,
        figure: &str,
        limits: (f64, f64),
        busy: &str,
    ) -> String {
        let (p50, p99) = (
            self.g(&format!("{figure}_ms_p50")),
            self.g(&format!("{figure}_ms_p99")),
        );
        format!(
            "| {measure} | {target} | {p50:.3} / {p99:.3} ms | {} |\n",
            verdict(p50 < limits.0 && p99 < limits.1, self.busy(busy))
        )
    }

    fn latency_targets(&self) -> String {
        let n = self.streams_n();
        let tight = (0.5, 5.0);
        let loose = (1.0, 10.0);
        [
            self.latency_row(
                "server overhead per tool iteration, native, p50 / p99",
                "< 0.5 / < 5 ms",
                "overhead_native",
                tight,
                "overhead_native",
            ),
            self.latency_row(
                "server overhead per tool iteration, JSON mode, p50 / p99",
                "< 0.5 / < 5 ms",
                "overhead_json",
                tight,
                "overhead_json",
            ),
            self.latency_row(
                &format!("token chunk → SSE event at {n} concurrent streams, p50 / p99"),
                "< 1 / < 10 ms",
                &format!("scale_{n}_token"),
                loose,
                &format!("scale_{n}"),
            ),
            self.latency_row(
                &format!("same, all {n} streaming at once at 20 tokens/s each (steady state)"),
                "< 0.5 / < 5 ms",
                "streams_20_token",
                tight,
                "streams_20",
            ),
            self.latency_row(
                &format!("same, all {n} streaming at once at 50 tokens/s each (steady state)"),
                "< 1 / < 10 ms",
                "streams_50_token",
                loose,
                "streams_50",
            ),
        ]
        .concat()
    }

    /// Runs held, memory per run, short runs per second and start-up.
    fn capacity_targets(&self) -> String {
        let g = |k: &str| self.g(k);
        let mut s = String::new();
        let n = if self.quick { 100 } else { 2000 };
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
        s
    }

    /// The token → SSE cell of scenario `k`, flagged when the machine was saturated.
    fn token_cell(&self, k: &str) -> String {
        flagged(
            format!(
                "{:.3} / {:.3}",
                self.g(&format!("{k}_token_ms_p50")),
                self.g(&format!("{k}_token_ms_p99"))
            ),
            self.busy(k),
        )
    }

    fn scaling(&self) -> String {
        let g = |k: String| self.g(&k);
        let mut s = String::from("\n| concurrent runs | run p50 / p99 (ms) | first event p50 / p99 (ms) | token → SSE p50 / p99 (ms) | peak active | RSS per run (KiB) | server CPU (% of a core) | machine busy (% of all cores) | errors |\n|---|---|---|---|---|---|---|---|---|\n");
        for n in [10, 100, 1000, 2000] {
            let k = format!("scale_{n}");
            if !self.has(&format!("{k}_errors")) {
                continue;
            }
            let token = self.token_cell(&k);
            s.push_str(&format!(
                "| {n} | {:.0} / {:.0} | {:.1} / {:.1} | {token} | {:.0} | {:.1} | {:.0} | {:.0} | {:.0} |\n",
                g(format!("{k}_run_ms_p50")), g(format!("{k}_run_ms_p99")),
                g(format!("{k}_ttfe_ms_p50")), g(format!("{k}_ttfe_ms_p99")),
                g(format!("{k}_peak_active")), g(format!("{k}_rss_per_run_kib")),
                g(format!("{k}_cpu_pct")), g(format!("{k}_machine_busy_pct")),
                g(format!("{k}_errors")),
            ));
        }
        s
    }

    fn streams(&self) -> String {
        let g = |k: String| self.g(&k);
        let mut s = String::from("\n| streams at once | tokens/s each | token → SSE p50 / p99 (ms) | all-streaming window (s) | server CPU (% of a core) | machine busy (% of all cores) |\n|---|---|---|---|---|---|\n");
        for rate in [10, 20, 50] {
            let k = format!("streams_{rate}");
            if !self.has(&format!("{k}_errors")) {
                continue;
            }
            let window = if g(format!("{k}_saturated")) > 0.5 {
                "none: saturated (every token counted)".to_string()
            } else {
                format!("{:.1}", g(format!("{k}_plateau_s")))
            };
            let token = self.token_cell(&k);
            s.push_str(&format!(
                "| {} | {rate} | {token} | {window} | {:.0} | {:.0} |\n",
                self.streams_n(),
                g(format!("{k}_cpu_pct")),
                g(format!("{k}_machine_busy_pct")),
            ));
        }
        if self.has("floor_token_ms_p50") {
            s.push_str(&format!(
                "| {} (mock → client, no reagent) | 50 | {:.3} / {:.3} | | | |\n",
                self.streams_n(),
                self.g("floor_token_ms_p50"),
                self.g("floor_token_ms_p99"),
            ));
        }
        s
    }

    fn history(&self) -> String {
        let mut s = String::from("\n| history (messages) | mock round trip (ms) | overhead per iteration p50 / p99 (ms) |\n|---|---|---|\n");
        for h in [10, 100, 1000] {
            if !self.has(&format!("history_{h}_mock_rtt_ms")) {
                continue;
            }
            s.push_str(&format!(
                "| {h} | {:.3} | {:.3} / {:.3} |\n",
                self.g(&format!("history_{h}_mock_rtt_ms")),
                self.g(&format!("history_{h}_overhead_ms_p50")),
                self.g(&format!("history_{h}_overhead_ms_p99")),
            ));
        }
        s
    }
}

/// A target's verdict where no machine-busy check applies (these rows are not latencies).
fn mark(ok: bool) -> &'static str {
    if ok {
        "✓"
    } else {
        "✗ missed"
    }
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
