//! `smoke` (CI, seconds) and `soak` (minutes): mixed load with interrupts, cancels and, for the
//! soak, injected provider errors; then the process checks (`/metrics` back to idle, RSS stable)
//! and a read-only check of the database after a graceful stop.

use std::time::{Duration, Instant};

use crate::check;
use crate::load::{self, Load, LoadReport};
use crate::spawn::MockFlags;
use crate::spawn::Stack;
use crate::stats::median;

/// Shared ending: quiesce, stop gracefully, check the database. Returns the violations.
async fn finish(
    http: &reqwest::Client,
    stack: Stack,
    idle_tasks: f64,
    concurrency: usize,
    reports: &[LoadReport],
) -> anyhow::Result<Vec<String>> {
    let mut errs = Vec::new();
    let max_tasks = idle_tasks + concurrency as f64 + 4.0;
    let (g, e) =
        check::quiesced(http, &stack.server.base, max_tasks, Duration::from_secs(15)).await;
    println!("/metrics after the load: {g:?} (alive tasks when idle before: {idle_tasks}; allowed {max_tasks}: idle + one per concurrent conversation + 4)");
    errs.extend(e);
    let db = stack.spec.db_path();
    let Stack { mock, spec, server } = stack;
    match server.stop(Duration::from_secs(30)).await {
        Ok(status) if status.success() => {}
        Ok(status) => errs.push(format!("reagent serve exited with {status} on SIGTERM")),
        Err(e) => errs.push(format!("{e:#}")),
    }
    drop(mock);
    let report = check::database(&db).await?;
    let client_runs: usize = reports.iter().map(|r| r.runs).sum();
    let interrupts: usize = reports.iter().map(|r| r.interrupts_accepted).sum();
    println!(
        "database: {} runs, {} events, {} interrupts stored ({} conversations and {} accepted interrupts seen by the client)",
        report.runs, report.events, report.interrupts, client_runs, interrupts
    );
    if (report.runs as usize) < client_runs.saturating_sub(reports.iter().map(|r| r.errors).sum()) {
        errs.push(format!(
            "database holds {} runs, the client saw {client_runs}",
            report.runs
        ));
    }
    // Those handed to a next run are deleted as interrupts when its query is stored.
    let kept = interrupts - reports.iter().map(|r| r.interrupts_moved).sum::<usize>();
    if (report.interrupts as usize) < kept {
        errs.push(format!(
            "database holds {} interrupts, {kept} accepted ones were not handed to a next run",
            report.interrupts
        ));
    }
    errs.extend(report.errors.into_iter().map(|e| format!("database: {e}")));
    drop(spec);
    Ok(errs)
}

pub async fn smoke() -> anyhow::Result<bool> {
    let http = crate::http_client()?;
    let flags = MockFlags {
        latency_ms: 5,
        tokens_per_s: 500.0,
        answer_tokens: 10,
        tool_iterations: 2,
        stamp_tokens: true,
        ..MockFlags::default()
    };
    let stack = Stack::start(&http, &flags, &[]).await?;
    let idle = check::gauges(&http, &stack.server.base)
        .await
        .map(|g| g.alive_tasks)
        .unwrap_or(f64::NAN);
    let load = Load {
        conversations: 40,
        concurrency: 10,
        mode: "mixed".into(),
        interrupt_rate: 0.4,
        cancel_rate: 0.25,
        timeout: Duration::from_secs(120),
        ..Load::default()
    };
    // Its own client: dropping it closes its connections before the idle checks.
    let load_http = crate::http_client()?;
    let r = load::run(
        &load_http,
        &stack.server.base,
        Some(stack.server.pid),
        &load,
    )
    .await;
    drop(load_http);
    r.print("smoke: 40 conversations, 10 at once, native and JSON, interrupts and cancels");
    let mut errs: Vec<String> = r.error_samples.clone();
    if r.errors > 0 && errs.is_empty() {
        errs.push(format!("{} runs with errors", r.errors));
    }
    errs.extend(
        finish(
            &http,
            stack,
            idle,
            load.concurrency,
            std::slice::from_ref(&r),
        )
        .await?,
    );
    for e in &errs {
        println!("ERROR {e}");
    }
    println!("smoke: {}", if errs.is_empty() { "OK" } else { "FAILED" });
    Ok(errs.is_empty())
}

pub async fn soak(minutes: f64, concurrency: usize, error_rate: f64) -> anyhow::Result<bool> {
    let http = crate::http_client()?;
    let flags = MockFlags {
        latency_ms: 20,
        tokens_per_s: 200.0,
        answer_tokens: 30,
        tool_iterations: 2,
        error_rate,
        seed: 7,
        stamp_tokens: true,
        first_call_latency_ms: None,
    };
    let stack = Stack::start(&http, &flags, &[("LLM_MAX_RETRIES", "2".into())]).await?;
    let idle = check::gauges(&http, &stack.server.base)
        .await
        .map(|g| g.alive_tasks)
        .unwrap_or(f64::NAN);
    let idle_rss = crate::procinfo::memory_kib(stack.server.pid)
        .map(|m| m.0)
        .unwrap_or(0);
    let t0 = Instant::now();
    let (reports, rss) = chunks(&stack, t0, minutes, concurrency).await?;
    let wall = t0.elapsed().as_secs_f64();
    let mut errs = summarize(&reports, &rss, wall, idle_rss);
    errs.extend(finish(&http, stack, idle, concurrency, &reports).await?);
    for e in &errs {
        println!("ERROR {e}");
    }
    println!("soak: {}", if errs.is_empty() { "OK" } else { "FAILED" });
    Ok(errs.is_empty())
}

/// Loads in chunks until `minutes` have passed since `t0`: each chunk's report, and the server's
/// RSS over the whole soak as (seconds since `t0`, KiB).
async fn chunks(
    stack: &Stack,
    t0: Instant,
    minutes: f64,
    concurrency: usize,
) -> anyhow::Result<(Vec<LoadReport>, Vec<(f64, u64)>)> {
    let end = Duration::from_secs_f64(minutes * 60.0);
    let mut reports = Vec::new();
    let mut rss: Vec<(f64, u64)> = Vec::new();
    let mut chunk = 0u64;
    let load_http = crate::http_client()?;
    // Closed-loop chunks so a new chunk starts as soon as the last one ends.
    while t0.elapsed() < end {
        let offset = t0.elapsed().as_secs_f64();
        let r = load::run(
            &load_http,
            &stack.server.base,
            Some(stack.server.pid),
            &chunk_load(concurrency, chunk),
        )
        .await;
        rss.extend(r.samples.iter().map(|s| (offset + s.0, s.1)));
        println!(
            "[{:>5.0} s] chunk {chunk}: {} runs, {:.0} runs/s, errors {}, statuses {:?}, RSS {} KiB",
            t0.elapsed().as_secs_f64(),
            r.runs,
            r.runs_per_s,
            r.errors,
            r.statuses,
            r.samples.last().map(|s| s.1).unwrap_or(0)
        );
        for e in &r.error_samples {
            println!("  ERROR {e}");
        }
        reports.push(r);
        chunk += 1;
    }
    drop(load_http);
    Ok((reports, rss))
}

/// Chunk `chunk` of the soak: ten conversations per concurrent slot, each chunk its own seed.
fn chunk_load(concurrency: usize, chunk: u64) -> Load {
    Load {
        conversations: concurrency * 10,
        concurrency,
        mode: "mixed".into(),
        engine: None,
        agent: None,
        interrupt_rate: 0.2,
        cancel_rate: 0.1,
        also_ok: vec!["failed"],
        seed: 1000 + chunk,
        timeout: Duration::from_secs(120),
        ramp: Duration::ZERO,
        targets: None,
    }
}

/// Prints the soak's totals and RSS; the chunks' error samples and an RSS growth are violations.
fn summarize(reports: &[LoadReport], rss: &[(f64, u64)], wall: f64, idle_rss: u64) -> Vec<String> {
    let runs: usize = reports.iter().map(|r| r.runs).sum();
    let failed_streams: usize = reports.iter().map(|r| r.errors).sum();
    let mut statuses = std::collections::BTreeMap::<String, usize>::new();
    for r in reports {
        for (k, v) in &r.statuses {
            *statuses.entry(k.clone()).or_default() += v;
        }
    }
    let mut errs: Vec<String> = reports
        .iter()
        .flat_map(|r| r.error_samples.iter().cloned())
        .collect();
    // RSS stable: the median of the last quarter against the median of the second quarter.
    let quarter = |q: f64| -> f64 {
        let v: Vec<f64> = rss
            .iter()
            .filter(|(t, _)| *t >= wall * q && *t < wall * (q + 0.25))
            .map(|(_, r)| *r as f64)
            .collect();
        median(&v)
    };
    let (q2, q4) = (quarter(0.25), quarter(0.75));
    let peak = rss.iter().map(|s| s.1).max().unwrap_or(0);
    println!(
        "soak: {:.1} min, {runs} runs ({:.1} runs/s), streams with errors {failed_streams}, statuses {statuses:?}",
        wall / 60.0,
        runs as f64 / wall
    );
    println!(
        "RSS: idle {idle_rss} KiB, 2nd-quarter median {q2:.0} KiB, last-quarter median {q4:.0} KiB, peak {peak} KiB"
    );
    if q4 > q2 * 1.2 + 4096.0 {
        errs.push(format!(
            "RSS grew from {q2:.0} KiB (2nd quarter) to {q4:.0} KiB (last quarter)"
        ));
    }
    errs
}
