//! A load: N conversations at concurrency C against one server, with the server's CPU, RSS and
//! `/metrics` sampled meanwhile.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;
use tokio::sync::Semaphore;

use crate::conv::{self, ConvPlan, ConvResult};
use crate::multi::Targets;
use reagent::testing::mock_provider::unix_micros;

use crate::cost::{saturated, show_us, us_per};
use crate::procinfo::{busy_pct, memory_kib, read_machine_ticks, CpuMeter, MachineMeter};
use crate::stats::Summary;

/// The shape of a load.
#[derive(Clone, Debug)]
pub struct Load {
    pub conversations: usize,
    pub concurrency: usize,
    /// `native`, `json`, `auto`, or `mixed` (alternating native and JSON).
    pub mode: String,
    /// `react`, `dag` or `auto`; the server's default when `None`.
    pub engine: Option<String>,
    pub interrupt_rate: f64,
    pub cancel_rate: f64,
    pub also_ok: Vec<&'static str>,
    pub seed: u64,
    pub timeout: Duration,
    /// Conversation i starts at `i * ramp / conversations` (zero: all at once), so that a steady
    /// state of streams with random phases can be measured apart from a start stampede.
    pub ramp: Duration,
    /// Several instances: each conversation spread over them ([`crate::multi`]).
    pub targets: Option<Arc<Targets>>,
}

impl Default for Load {
    fn default() -> Self {
        Load {
            conversations: 10,
            concurrency: 10,
            mode: "native".into(),
            engine: None,
            interrupt_rate: 0.0,
            cancel_rate: 0.0,
            also_ok: vec![],
            seed: 1,
            timeout: Duration::from_secs(300),
            ramp: Duration::ZERO,
            targets: None,
        }
    }
}

/// Everything a load measured.
#[derive(Clone, Debug, Default, Serialize)]
pub struct LoadReport {
    pub runs: usize,
    pub errors: usize,
    pub error_samples: Vec<String>,
    pub statuses: BTreeMap<String, usize>,
    pub interrupts_accepted: usize,
    /// Accepted interrupts that became a next run's query (SPEC §3.8).
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

/// The value of an unlabelled metric in Prometheus text.
pub fn metric(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse().ok())
}

pub async fn scrape(http: &reqwest::Client, base: &str) -> Option<String> {
    http.get(format!("{base}/metrics"))
        .send()
        .await
        .ok()?
        .text()
        .await
        .ok()
}

fn plans(load: &Load) -> Vec<ConvPlan> {
    let mut rng = StdRng::seed_from_u64(load.seed);
    (0..load.conversations)
        .map(|i| ConvPlan {
            mode: match load.mode.as_str() {
                "json" => "json",
                "auto" => "auto",
                "mixed" if i % 2 == 1 => "json",
                _ => "native",
            },
            engine: load.engine.clone(),
            interrupt: rng.random::<f64>() < load.interrupt_rate,
            cancel: rng.random::<f64>() < load.cancel_rate,
            also_ok: load.also_ok.clone(),
            timeout: load.timeout,
            targets: load.targets.clone(),
        })
        .collect()
}

/// Runs `load` against `base`; `pid` (when known) is sampled for CPU and memory.
pub async fn run(http: &reqwest::Client, base: &str, pid: Option<u32>, load: &Load) -> LoadReport {
    let idle_rss = pid.and_then(memory_kib).map(|m| m.0).unwrap_or(0);
    let cpu = pid.map(CpuMeter::start);
    let own = CpuMeter::start(std::process::id());
    let machine = MachineMeter::start();
    let sem = Arc::new(Semaphore::new(load.concurrency.max(1)));
    let t0 = Instant::now();
    let stop = tokio_util::sync::CancellationToken::new();
    let sampler = {
        let (http, base, stop) = (http.clone(), base.to_string(), stop.clone());
        tokio::spawn(async move {
            let mut samples = Vec::new();
            let mut machine = Vec::new();
            let mut tick = tokio::time::interval(Duration::from_millis(100));
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = tick.tick() => {}
                    () = stop.cancelled() => break,
                }
                let active = scrape(&http, &base)
                    .await
                    .and_then(|t| metric(&t, "reagent_active_runs"))
                    .unwrap_or(0.0) as u64;
                let rss = pid.and_then(memory_kib).map(|m| m.0).unwrap_or(0);
                samples.push((t0.elapsed().as_secs_f64(), rss, active));
                if let Some((busy, total)) = read_machine_ticks() {
                    machine.push((unix_micros(), busy, total));
                }
            }
            (samples, machine)
        })
    };
    let mut tasks = Vec::with_capacity(load.conversations);
    let n = load.conversations.max(1) as u32;
    for (i, plan) in plans(load).into_iter().enumerate() {
        let (http, base, sem) = (http.clone(), base.to_string(), sem.clone());
        let start = tokio::time::Instant::from_std(t0) + load.ramp * i as u32 / n;
        tasks.push(tokio::spawn(async move {
            if start > tokio::time::Instant::now() {
                tokio::time::sleep_until(start).await;
            }
            let _permit = sem.acquire_owned().await;
            conv::run(&http, &base, &plan, i).await
        }));
    }
    let mut results: Vec<ConvResult> = Vec::with_capacity(tasks.len());
    for t in tasks {
        match t.await {
            Ok(r) => results.push(r),
            Err(e) => results.push(ConvResult {
                errors: vec![format!("client task failed: {e}")],
                ..ConvResult::default()
            }),
        }
    }
    let wall = t0.elapsed().as_secs_f64();
    let (cpu_s, cpu_pct) = cpu.map(|c| c.stop()).unwrap_or((0.0, 0.0));
    let (loadgen_cpu_s, _) = own.stop();
    let machine_busy_pct = machine.stop();
    stop.cancel();
    let (samples, machine_samples) = sampler.await.unwrap_or_default();
    let hwm = pid.and_then(memory_kib).map(|m| m.1).unwrap_or(0);

    let mut report = LoadReport {
        runs: results.len(),
        wall_s: wall,
        cpu_s,
        cpu_pct,
        loadgen_cpu_s,
        machine_busy_pct,
        idle_rss_kib: idle_rss,
        hwm_kib: hwm,
        ..LoadReport::default()
    };
    let (mut run_ms, mut ttfe, mut tok, mut gaps) = (vec![], vec![], vec![], vec![]);
    for r in &results {
        if !r.errors.is_empty() {
            report.errors += 1;
            for e in &r.errors {
                if report.error_samples.len() < 20 {
                    report.error_samples.push(e.clone());
                }
            }
        }
        *report
            .statuses
            .entry(r.status.clone().unwrap_or_else(|| "none".into()))
            .or_default() += 1;
        report.interrupts_accepted += r.interrupts_accepted;
        report.interrupts_moved += r.interrupts_moved;
        report.cancels_accepted += usize::from(r.cancel_accepted);
        (report.reconnects, report.resumed) =
            (report.reconnects + r.reconnects, report.resumed + r.resumed);
        run_ms.extend(r.run_ms);
        ttfe.extend(r.ttfe_ms);
        tok.extend(r.tokens.iter().map(|t| t.1));
        for (i, w) in r.tool_end_ms.windows(2).enumerate() {
            gaps.push(w[1] - w[0]);
            report.gaps.push((i + 1, w[1] - w[0]));
        }
    }
    report.tokens_streamed = results.iter().map(|r| r.tokens.len()).sum();
    if pid.is_some() {
        report.cpu_us_per_token = us_per(cpu_s, report.tokens_streamed);
        report.cpu_us_per_run = us_per(cpu_s, results.len());
    }
    report.runs_per_s = results.len() as f64 / wall.max(1e-9);
    report.run_ms = Summary::of(&run_ms);
    report.ttfe_ms = Summary::of(&ttfe);
    report.token_ms = Summary::of(&tok);
    if let Some((from, to)) = plateau_bounds(&results) {
        report.plateau_token_ms = Summary::of(&plateau(&results, from, to));
        report.plateau_s = (to - from) as f64 / 1e6;
        report.plateau_machine_busy_pct = busy_within(&machine_samples, from, to);
    }
    report.iter_gap_ms = Summary::of(&gaps);
    report.peak_rss_kib = samples.iter().map(|s| s.1).max().unwrap_or(0);
    if let Some(&(_, rss, active)) = samples
        .iter()
        .max_by_key(|s| (s.2, s.1))
        .filter(|s| s.2 > 0)
    {
        report.peak_active = active;
        report.rss_at_peak_active_kib = rss;
        report.rss_per_run_kib = (rss as f64 - idle_rss as f64) / active as f64;
    }
    report.samples = samples;
    report.machine_samples = machine_samples;
    report
}

/// The window when every conversation was streaming its answer, unix µs: from the last first
/// token to the first last token; `None` when the streams never all overlapped.
fn plateau_bounds(results: &[ConvResult]) -> Option<(u64, u64)> {
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
fn plateau(results: &[ConvResult], from: u64, to: u64) -> Vec<f64> {
    results
        .iter()
        .flat_map(|r| r.tokens.iter())
        .filter(|t| (from..=to).contains(&t.0))
        .map(|t| t.1)
        .collect()
}

/// The machine's busy share over the samples spanning `from..=to` (the last sample at or before
/// `from`, the first at or after `to`; the nearest ones when the window runs past them).
fn busy_within(samples: &[(u64, u64, u64)], from: u64, to: u64) -> f64 {
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
        let row = |name: &str, s: &Summary| {
            if s.n > 0 {
                println!(
                    "  {name:<22} n={:<7} p50 {:>9.3}  p90 {:>9.3}  p99 {:>9.3}  max {:>9.3} ms",
                    s.n, s.p50, s.p90, s.p99, s.max
                );
            }
        };
        row("run duration", &self.run_ms);
        row("time to first event", &self.ttfe_ms);
        row("token -> SSE event", &self.token_ms);
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
        for e in &self.error_samples {
            println!("  ERROR {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conv(tokens: &[(u64, f64)]) -> ConvResult {
        ConvResult {
            tokens: tokens.to_vec(),
            ..ConvResult::default()
        }
    }

    #[test]
    fn plateau_keeps_the_tokens_sent_while_every_stream_was_open() {
        let (a, b) = (
            conv(&[(100, 1.0), (200, 2.0), (300, 3.0), (400, 4.0)]),
            conv(&[(250, 5.0), (350, 6.0), (450, 7.0)]),
        );
        let both = [a, b];
        // Window [250, 400]: a's 300 and 400, b's 250 and 350.
        assert_eq!(plateau_bounds(&both), Some((250, 400)));
        assert_eq!(plateau(&both, 250, 400), [3.0, 4.0, 5.0, 6.0]);
        // No overlap, or a conversation without tokens: no plateau.
        assert_eq!(
            plateau_bounds(&[conv(&[(1, 1.0), (2, 1.0)]), conv(&[(5, 1.0)])]),
            None
        );
        assert_eq!(
            plateau_bounds(&[conv(&[(1, 1.0), (9, 1.0)]), conv(&[])]),
            None
        );
    }

    #[test]
    fn machine_busy_is_taken_over_the_samples_spanning_the_window() {
        // (unix µs, busy ticks, total ticks): 50 % busy until 300, then fully busy.
        let samples = [
            (100, 0, 0),
            (200, 50, 100),
            (300, 100, 200),
            (400, 200, 300),
        ];
        assert_eq!(busy_within(&samples, 250, 400), 100.0 * 150.0 / 200.0);
        assert_eq!(busy_within(&samples, 300, 400), 100.0);
        // A window past the samples uses the nearest; too few samples: unknown.
        assert_eq!(busy_within(&samples, 0, 1000), 100.0 * 200.0 / 300.0);
        assert_eq!(busy_within(&samples[..1], 0, 1000), 0.0);
    }

    #[test]
    fn reads_unlabelled_metrics_only() {
        let text = "# TYPE reagent_active_runs gauge\nreagent_active_runs 12\nreagent_active_runs_x 3\nreagent_sse_subscribers 0\n";
        assert_eq!(metric(text, "reagent_active_runs"), Some(12.0));
        assert_eq!(metric(text, "reagent_sse_subscribers"), Some(0.0));
        assert_eq!(metric(text, "reagent_missing"), None);
    }

    #[test]
    fn plans_follow_the_rates_and_seed() {
        let load = Load {
            conversations: 1000,
            mode: "mixed".into(),
            interrupt_rate: 0.3,
            cancel_rate: 0.0,
            ..Load::default()
        };
        let p = plans(&load);
        let interrupts = p.iter().filter(|p| p.interrupt).count();
        assert!((200..400).contains(&interrupts), "{interrupts}");
        assert!(p.iter().all(|p| !p.cancel));
        assert_eq!(p[0].mode, "native");
        assert_eq!(p[1].mode, "json");
        let again = plans(&load);
        assert!(p
            .iter()
            .zip(&again)
            .all(|(a, b)| a.interrupt == b.interrupt));
    }
}
