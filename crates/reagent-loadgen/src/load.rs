//! A load: N conversations at concurrency C against one server, with the server's CPU, RSS and
//! `/metrics` sampled meanwhile.
//!
//! The report and its figures are in `load/report.rs`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tokio::sync::Semaphore;

use crate::conv;
use crate::plan::{ConvPlan, ConvResult};
use crate::targets::Targets;
use reagent_mock::unix_micros;

use crate::cost::us_per;
use crate::procinfo::{memory_kib, read_machine_ticks, CpuMeter, MachineMeter};
use crate::stats::Summary;

mod report;
#[cfg(test)]
mod tests;

pub use report::LoadReport;
use report::{busy_within, plateau, plateau_bounds};

/// The shape of a load.
#[derive(Clone, Debug)]
pub struct Load {
    pub conversations: usize,
    pub concurrency: usize,
    /// `native`, `json`, `auto`, or `mixed` (alternating native and JSON).
    pub mode: String,
    /// `react`, `dag` or `auto`; the server's default when `None`.
    pub engine: Option<String>,
    /// The agent each conversation runs (`agent` of `POST /api/chat`); the default when `None`.
    pub agent: Option<String>,
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
            agent: None,
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
            agent: load.agent.clone(),
            interrupt: rng.random::<f64>() < load.interrupt_rate,
            cancel: rng.random::<f64>() < load.cancel_rate,
            also_ok: load.also_ok.clone(),
            timeout: load.timeout,
            targets: load.targets.clone(),
        })
        .collect()
}

/// (seconds since the start, RSS KiB, active runs) and (unix µs, busy ticks, total ticks).
type Samples = (Vec<(f64, u64, u64)>, Vec<(u64, u64, u64)>);

/// Runs `load` against `base`; `pid` (when known) is sampled for CPU and memory.
pub async fn run(http: &reqwest::Client, base: &str, pid: Option<u32>, load: &Load) -> LoadReport {
    let idle_rss = pid.and_then(memory_kib).map(|m| m.0).unwrap_or(0);
    let cpu = pid.map(CpuMeter::start);
    let own = CpuMeter::start(std::process::id());
    let machine = MachineMeter::start();
    let sem = Arc::new(Semaphore::new(load.concurrency.max(1)));
    let t0 = Instant::now();
    let stop = tokio_util::sync::CancellationToken::new();
    let sampler = tokio::spawn(sample(
        http.clone(),
        base.to_string(),
        pid,
        t0,
        stop.clone(),
    ));
    let results = converse(http, base, load, sem, t0).await;
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
    tally(&mut report, &results);
    if pid.is_some() {
        report.cpu_us_per_token = us_per(cpu_s, report.tokens_streamed);
        report.cpu_us_per_run = us_per(cpu_s, results.len());
    }
    report.runs_per_s = results.len() as f64 / wall.max(1e-9);
    per_run_usage(&mut report, &results);
    if let Some((from, to)) = plateau_bounds(&results) {
        report.plateau_token_ms = Summary::of(&plateau(&results, from, to));
        report.plateau_s = (to - from) as f64 / 1e6;
        report.plateau_machine_busy_pct = busy_within(&machine_samples, from, to);
    }
    memory_at_peak(&mut report, &samples, idle_rss);
    report.samples = samples;
    report.machine_samples = machine_samples;
    report
}

/// Samples the server's RSS and active runs, and the machine's ticks, every 100 ms until `stop`.
async fn sample(
    http: reqwest::Client,
    base: String,
    pid: Option<u32>,
    t0: Instant,
    stop: tokio_util::sync::CancellationToken,
) -> Samples {
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
}

/// Every conversation of `load`, each started on its ramp and run when `sem` lets it.
async fn converse(
    http: &reqwest::Client,
    base: &str,
    load: &Load,
    sem: Arc<Semaphore>,
    t0: Instant,
) -> Vec<ConvResult> {
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
    results
}

/// The counts, error samples and latency summaries over the conversations' results.
fn tally(report: &mut LoadReport, results: &[ConvResult]) {
    let (mut run_ms, mut ttfe, mut tok, mut gaps) = (vec![], vec![], vec![], vec![]);
    let (mut first, mut first_delta) = (vec![], vec![]);
    for r in results {
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
        first.extend(r.tokens.first().map(|t| t.1));
        first_delta.extend(r.first_delta_ms);
        for (i, w) in r.tool_end_ms.windows(2).enumerate() {
            gaps.push(w[1] - w[0]);
            report.gaps.push((i + 1, w[1] - w[0]));
        }
    }
    report.tokens_streamed = results.iter().map(|r| r.tokens.len()).sum();
    report.run_ms = Summary::of(&run_ms);
    report.ttfe_ms = Summary::of(&ttfe);
    report.token_ms = Summary::of(&tok);
    report.first_token_ms = Summary::of(&first);
    report.first_delta_ms = Summary::of(&first_delta);
    report.iter_gap_ms = Summary::of(&gaps);
}

/// Peak RSS, and the RSS per active run at the sample with the most runs active.
fn memory_at_peak(report: &mut LoadReport, samples: &[(f64, u64, u64)], idle_rss: u64) {
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
}

/// The means of `done.usage` and `done.synthesis` over the runs that reported them.
fn per_run_usage(report: &mut LoadReport, results: &[ConvResult]) {
    let mean = |values: Vec<f64>| {
        if values.is_empty() {
            0.0
        } else {
            values.iter().sum::<f64>() / values.len() as f64
        }
    };
    report.llm_calls_per_run = mean(
        results
            .iter()
            .filter_map(|r| r.llm_calls)
            .map(|n| n as f64)
            .collect(),
    );
    report.completion_tokens_per_run = mean(
        results
            .iter()
            .filter_map(|r| r.completion_tokens)
            .map(|n| n as f64)
            .collect(),
    );
    let said: Vec<f64> = results
        .iter()
        .filter_map(|r| r.synthesis)
        .map(|s| f64::from(u8::from(s)))
        .collect();
    report.synthesis_share = (!said.is_empty()).then(|| mean(said));
}
