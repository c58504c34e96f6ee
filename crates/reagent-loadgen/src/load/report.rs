//! What a load measured ([`LoadReport`]), the window when every stream was open, and how a
//! report prints.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::cost::{saturated, show_us};
use crate::plan::ConvResult;
use crate::procinfo::busy_pct;
use crate::stats::Summary;

/// Everything a load measured.
#[derive(Clone, Debug, Default, Serialize)]
pub struct LoadReport {
    pub runs: usize,
    pub errors: usize,
    pub error_samples: Vec<String>,
    pub statuses: BTreeMap<String, usize>,
    pub interrupts_accepted: usize,
    /// Accepted interrupts that became a next run's query (docs/api.md).
    pub interrupts_moved: usize,
    pub cancels_accepted: usize,
    /// Streams resumed on another instance, and `step resumed` events seen (several instances).
    pub reconnects: usize,
    pub resumed: usize,
    pub wall_s: f64,
    pub runs_per_s: f64,
    pub run_ms: Summary,
    pub ttfe_ms: Summary,
    pub token_ms: Summary,
    /// Token → SSE for each run's first answer token: how soon the answer's first word
    /// follows the provider's.
    pub first_token_ms: Summary,
    /// Request sent → the first answer delta at the client: when the user sees the answer begin.
    pub first_delta_ms: Summary,
    /// Means over the runs that reported them: LLM calls and completion tokens per run
    /// (`done.usage`), and the share of runs whose answer a synthesis call wrote.
    pub llm_calls_per_run: f64,
    pub completion_tokens_per_run: f64,
    /// `None` when no run said (a server from before `done.synthesis`).
    pub synthesis_share: Option<f64>,
    /// Token → SSE for the tokens sent while every conversation of the load was streaming its
    /// answer (between the last first token and the first last token): the figure "at N
    /// concurrent streams", free of start-up and wind-down.
    pub plateau_token_ms: Summary,
    /// Length of that window, seconds (0 when the streams never all overlapped).
    pub plateau_s: f64,
    /// Busy share of all the machine's cores over that window, percent (0 if unknown).
    pub plateau_machine_busy_pct: f64,
    /// Gaps between consecutive `tool_end` events of a run, at the client.
    pub iter_gap_ms: Summary,
    pub cpu_s: f64,
    pub cpu_pct: f64,
    /// Stamped answer tokens received over SSE (0 when the mock does not stamp them).
    pub tokens_streamed: usize,
    /// Server CPU (all threads) per streamed answer token, µs: everything the server did in the
    /// load, runs and tool iterations included, over the tokens it streamed.
    pub cpu_us_per_token: Option<f64>,
    /// Server CPU per run, µs.
    pub cpu_us_per_run: Option<f64>,
    /// CPU seconds of this load generator during the load.
    pub loadgen_cpu_s: f64,
    /// Busy share of all the machine's cores during the load, percent (0 if unknown).
    pub machine_busy_pct: f64,
    pub idle_rss_kib: u64,
    pub peak_rss_kib: u64,
    pub hwm_kib: u64,
    pub peak_active: u64,
    pub rss_at_peak_active_kib: u64,
    /// (RSS at the most active sample − idle RSS) / active runs then.
    pub rss_per_run_kib: f64,
    /// (index of the later iteration, gap in ms) for every gap, for binning by history size.
    #[serde(skip)]
    pub gaps: Vec<(usize, f64)>,
    /// (seconds since the start, RSS KiB, active runs) samples.
    #[serde(skip)]
    pub samples: Vec<(f64, u64, u64)>,
    /// (unix µs, machine busy ticks, machine total ticks) samples, same cadence.
    #[serde(skip)]
    pub machine_samples: Vec<(u64, u64, u64)>,
}

/// The window when every conversation was streaming its answer, unix µs: from the last first
/// token to the first last token; `None` when the streams never all overlapped.
pub(super) fn plateau_bounds(results: &[ConvResult]) -> Option<(u64, u64)> {
    let spans: Vec<(u64, u64)> = results
        .iter()
        .filter_map(|r| {
            let first = r.tokens.iter().map(|t| t.0).min()?;
            let last = r.tokens.iter().map(|t| t.0).max()?;
            Some((first, last))
        })
        .collect();
    if spans.len() != results.len() || spans.is_empty() {
        return None;
    }
    let from = spans.iter().map(|s| s.0).max()?;
    let to = spans.iter().map(|s| s.1).min()?;
    (from < to).then_some((from, to))
}

/// The latencies of the tokens sent within `from..=to` (see [`LoadReport::plateau_token_ms`]).
pub(super) fn plateau(results: &[ConvResult], from: u64, to: u64) -> Vec<f64> {
    results
        .iter()
        .flat_map(|r| r.tokens.iter())
        .filter(|t| (from..=to).contains(&t.0))
        .map(|t| t.1)
        .collect()
}

/// The machine's busy share over the samples spanning `from..=to` (the last sample at or before
/// `from`, the first at or after `to`; the nearest ones when the window runs past them).
pub(super) fn busy_within(samples: &[(u64, u64, u64)], from: u64, to: u64) -> f64 {
    let start = samples
        .iter()
        .rev()
        .find(|s| s.0 <= from)
        .or(samples.first());
    let end = samples.iter().find(|s| s.0 >= to).or(samples.last());
    match (start, end) {
        (Some(a), Some(b)) if b.0 > a.0 => busy_pct((a.1, a.2), (b.1, b.2)),
        _ => 0.0,
    }
}

impl LoadReport {
    pub fn print(&self, title: &str) {
        println!("== {title}");
        println!(
            "runs {} in {:.2} s ({:.1} runs/s), errors {}, statuses {:?}, interrupts accepted {}, cancels accepted {}",
            self.runs, self.wall_s, self.runs_per_s, self.errors, self.statuses,
            self.interrupts_accepted, self.cancels_accepted
        );
        if self.reconnects + self.resumed > 0 {
            println!(
                "  streams resumed on another instance {}, step resumed seen {}",
                self.reconnects, self.resumed
            );
        }
        self.print_latencies();
        self.print_resources();
        for e in &self.error_samples {
            println!("  ERROR {e}");
        }
    }

    /// The latency rows, with the per-run usage and the all-streaming window among them.
    fn print_latencies(&self) {
        row("run duration", &self.run_ms);
        row("time to first event", &self.ttfe_ms);
        row("token -> SSE event", &self.token_ms);
        row("first token -> SSE", &self.first_token_ms);
        row("request -> 1st delta", &self.first_delta_ms);
        if self.llm_calls_per_run > 0.0 {
            let synthesis = self
                .synthesis_share
                .map_or("not reported".to_string(), |s| {
                    format!("{:.0} % of runs", s * 100.0)
                });
            println!(
                "  per run: {:.2} LLM calls, {:.1} completion tokens; synthesis: {synthesis}",
                self.llm_calls_per_run, self.completion_tokens_per_run,
            );
        }
        if self.plateau_s > 0.0 {
            row(
                &format!("  all streaming {:.1} s", self.plateau_s),
                &self.plateau_token_ms,
            );
            if self.plateau_machine_busy_pct > 0.0 {
                println!(
                    "    machine {:.0}% busy while all streamed",
                    self.plateau_machine_busy_pct
                );
            }
        }
        row("tool_end gap", &self.iter_gap_ms);
    }

    /// Server CPU and memory, and how busy the machine was.
    fn print_resources(&self) {
        if self.idle_rss_kib > 0 {
            println!(
                "  server CPU {:.2} s ({:.0}% of one core); RSS idle {} KiB, peak {} KiB, HWM {} KiB; peak active runs {} at RSS {} KiB → {:.1} KiB per active run",
                self.cpu_s, self.cpu_pct, self.idle_rss_kib, self.peak_rss_kib, self.hwm_kib,
                self.peak_active, self.rss_at_peak_active_kib, self.rss_per_run_kib
            );
        }
        if self.cpu_us_per_run.is_some() {
            println!(
                "  server CPU per streamed answer token {} ({} tokens), per run {}",
                show_us(self.cpu_us_per_token),
                self.tokens_streamed,
                show_us(self.cpu_us_per_run)
            );
        }
        if saturated(self.machine_busy_pct) {
            println!(
                "  SATURATED: the machine was {:.0} % busy; the latencies above measure its queues, not the server",
                self.machine_busy_pct
            );
        }
        if self.machine_busy_pct > 0.0 {
            println!(
                "  machine {:.0}% busy (all {} cores: server, load generator {:.2} s CPU, mock, anything else)",
                self.machine_busy_pct,
                std::thread::available_parallelism().map_or(0, |n| n.get()),
                self.loadgen_cpu_s
            );
        }
    }
}

/// One latency summary's line; nothing when it has no samples.
fn row(name: &str, s: &Summary) {
    if s.n > 0 {
        println!(
            "  {name:<22} n={:<7} p50 {:>9.3}  p90 {:>9.3}  p99 {:>9.3}  max {:>9.3} ms",
            s.n, s.p50, s.p90, s.p99, s.max
        );
    }
}
