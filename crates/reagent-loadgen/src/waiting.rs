//! `waiting`: what runs waiting for their caller's tool outputs hold (docs/api.md "Caller
//! tools"): nothing but stored rows, so no tokio task and (near) no memory of the server.
//!
//! One server on a fresh SQLite database and an in-process mock whose model calls the caller
//! tool `confirm` once, then answers. A warm-up round pauses N runs and answers them (the
//! allocator, the pools and SQLite's page cache reach their working size); then, after a settle,
//! the server's alive tokio tasks (`reagent_tokio_alive_tasks` on `/metrics`) and RSS are read,
//! N more runs are started and read to their `done {status: "requires_action"}`, and after
//! another settle both are read again. Every request uses a fresh connection, closed after it,
//! so no client connection is held either. The N waiting runs are then answered and each
//! continuation must complete: they were really waiting. Passes when the N runs add no task
//! and less than 5 KB (5,000 bytes) of RSS each.

use std::time::Duration;

use anyhow::Context;
use eventsource_stream::Eventsource;
use futures::StreamExt;
use reagent_mock::{MockConfig, MockProvider};
use serde_json::{json, Value};

use crate::procinfo::memory_kib;
use crate::spawn::{ServerSpec, SCRIPTED};

/// The most RSS a waiting run may add, in bytes (issue 39).
const MAX_BYTES_PER_RUN: f64 = 5000.0;
/// Requests in flight at once.
const CONCURRENCY: usize = 16;

pub async fn waiting(n: usize, warmup: usize) -> anyhow::Result<bool> {
    // No idle connections kept: each would be a task of the server.
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .timeout(Duration::from_secs(60))
        .build()?;
    let mock = MockProvider::start(MockConfig {
        tool: "confirm".into(),
        tool_args: r#"{"question":"ok?"}"#.into(),
        tool_iterations: 1,
        answer_tokens: 8,
        ..MockConfig::default()
    })
    .await?;
    let env: Vec<(&str, String)> = SCRIPTED.iter().map(|(k, v)| (*k, v.to_string())).collect();
    let spec = ServerSpec::new(&mock.base_url(), &env)?;
    let server = spec.start(&http).await?;
    let (base, pid) = (server.base.clone(), server.pid);

    for _ in 0..warmup {
        let warm = pause_all(&http, &base, n).await?;
        answer_all(&http, &base, &warm).await?;
    }
    let idle = reading(&http, &base, pid).await?;
    // Control: as many runs paused and answered, holding nothing at the reading.
    let done = pause_all(&http, &base, n).await?;
    answer_all(&http, &base, &done).await?;
    let before = reading(&http, &base, pid).await?;
    let runs = pause_all(&http, &base, n).await?;
    let after = reading(&http, &base, pid).await?;
    answer_all(&http, &base, &runs).await?;
    server.stop(Duration::from_secs(20)).await?;
    mock.shutdown().await;

    let tasks = after.tasks as i64 - before.tasks as i64;
    let per_run =
        |a: &Reading, b: &Reading| (b.rss_kib as f64 - a.rss_kib as f64) * 1024.0 / n.max(1) as f64;
    let (control, held) = (per_run(&idle, &before), per_run(&before, &after));
    println!(
        "== {n} runs waiting for tool outputs (after {warmup} warm-up rounds of {n}; 1.5 s settles)"
    );
    println!(
        "  tokio tasks alive: {} before, {} while they wait: {tasks:+}",
        before.tasks, after.tasks
    );
    println!(
        "  server RSS: {} KiB before, {} KiB while they wait: {held:+.0} bytes per run",
        before.rss_kib, after.rss_kib
    );
    println!(
        "  (control: {n} runs paused and answered before: {control:+.0} bytes per run, from {} KiB)",
        idle.rss_kib
    );
    println!("  continuations: {n} of {n} completed after the outputs");
    let ok = tasks <= 0 && held < MAX_BYTES_PER_RUN;
    println!(
        "  {} (no task and < {MAX_BYTES_PER_RUN:.0} bytes per waiting run)",
        if ok { "✓" } else { "✗" }
    );
    Ok(ok)
}

/// Alive tokio tasks and RSS of the server, after a settle.
struct Reading {
    tasks: u64,
    rss_kib: u64,
}

async fn reading(http: &reqwest::Client, base: &str, pid: u32) -> anyhow::Result<Reading> {
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let metrics = http
        .get(format!("{base}/metrics"))
        .send()
        .await?
        .error_for_status()?
        .text()
        .await?;
    let tasks = metrics
        .lines()
        .find_map(|l| l.strip_prefix("reagent_tokio_alive_tasks "))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .context("no reagent_tokio_alive_tasks on /metrics")? as u64;
    let rss_kib = memory_kib(pid).context("no /proc/PID/status")?.0;
    Ok(Reading { tasks, rss_kib })
}

/// A run waiting for outputs and the calls it waits for.
type Waiting = (String, Value);

/// Starts `n` runs that call the caller tool and reads each to its `done`.
async fn pause_all(http: &reqwest::Client, base: &str, n: usize) -> anyhow::Result<Vec<Waiting>> {
    futures::stream::iter(0..n)
        .map(|i| pause_one(http, base, i))
        .buffer_unordered(CONCURRENCY)
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .collect()
}

async fn pause_one(http: &reqwest::Client, base: &str, i: usize) -> anyhow::Result<Waiting> {
    let conv: Value = post(http, &format!("{base}/api/conversations"), json!({})).await?;
    let conv = conv["id"].as_str().context("conversation without id")?;
    let tools = json!([{"type": "function", "function": {
        "name": "confirm",
        "parameters": {"type": "object", "properties": {"question": {"type": "string"}}}
    }}]);
    let body = json!({"query": format!("waiting probe {i}"), "client_tools": tools});
    let run: Value = post(http, &format!("{base}/api/conversations/{conv}/runs"), body).await?;
    let run = run["run_id"].as_str().context("no run_id")?.to_string();
    let done = done_of(http, base, &run).await?;
    anyhow::ensure!(
        done["status"] == "requires_action",
        "run {run} ended {}, not requires_action",
        done["status"]
    );
    Ok((run, done["required_action"]["tool_calls"].clone()))
}

/// Answers each run's calls; each continuation must complete.
async fn answer_all(http: &reqwest::Client, base: &str, runs: &[Waiting]) -> anyhow::Result<()> {
    futures::stream::iter(runs)
        .map(|(run, calls)| async move {
            let outputs: Vec<Value> = calls
                .as_array()
                .context("a waiting run without calls")?
                .iter()
                .map(|c| json!({"call_id": c["call_id"], "output": "yes"}))
                .collect();
            let url = format!("{base}/api/runs/{run}/tool_outputs");
            let next: Value = post(http, &url, json!({"outputs": outputs})).await?;
            let next = next["run_id"].as_str().context("no run_id")?;
            let done = done_of(http, base, next).await?;
            anyhow::ensure!(
                done["status"] == "completed",
                "continuation {next} ended {}",
                done["status"]
            );
            Ok(())
        })
        .buffer_unordered(CONCURRENCY)
        .collect::<Vec<anyhow::Result<()>>>()
        .await
        .into_iter()
        .collect()
}

async fn post(http: &reqwest::Client, url: &str, body: Value) -> anyhow::Result<Value> {
    Ok(http
        .post(url)
        .json(&body)
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?)
}

/// The run's `done` event, read from its event stream.
async fn done_of(http: &reqwest::Client, base: &str, run: &str) -> anyhow::Result<Value> {
    let resp = http
        .get(format!("{base}/api/runs/{run}/events"))
        .send()
        .await?
        .error_for_status()?;
    let mut events = resp.bytes_stream().eventsource();
    while let Some(ev) = events.next().await {
        let ev = ev.map_err(|e| anyhow::anyhow!("run {run}: SSE error: {e}"))?;
        if ev.event == "done" {
            return Ok(serde_json::from_str(&ev.data)?);
        }
    }
    anyhow::bail!("run {run}: the stream ended without done")
}
