//! `memory`: where a held run's bytes are, measured as RSS deltas of the server while the parts
//! of a run are added one at a time to N runs on fresh stacks (the held scenario's mock: 3
//! iterations at 200 ms, 100 tokens at 50/s, but each run's first LLM call held for `hold`):
//!
//! 1. N idle keep-alive HTTP connections (one request served each, then silent): the HTTP
//!    connection's buffers and task. On a stack of its own (freed memory stays with the
//!    allocator and would hide what the next steps add).
//! 2. N runs started with `POST /api/conversations/{id}/runs` (no stream), all waiting on their
//!    first LLM call: the engine's state, the upstream request and connection, the run's rows
//!    and first events.
//! 3. An SSE subscriber on each (`GET /api/runs/{id}/events`): the SSE connection, its
//!    subscription and the replayed events.
//! 4. When the median run has streamed half its answer (read then, not after a settle): what
//!    the event log and the streaming buffers add.
//!
//! A delta is per run after the allocator settles (RSS counts what the allocator keeps, not what
//! the code holds live); the database's memory (SQLite's page cache) is fixed-size and shows in
//! the idle RSS, not per run. The minimal relay's RSS per stream (`floor --relay`) is the floor
//! for the two connections alone.

use std::time::Duration;

use anyhow::Context;
use eventsource_stream::Eventsource;
use futures::StreamExt;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::procinfo::memory_kib;
use crate::spawn::MockFlags;
use crate::spawn::Stack;

/// RSS per run added by each step, KiB (step name, total delta / N).
pub type Breakdown = Vec<(&'static str, f64)>;

/// `(name, rss after the step)` readings → per-run deltas between consecutive readings.
pub fn deltas(idle_kib: u64, steps: &[(&'static str, u64)], n: usize) -> Breakdown {
    let mut prev = idle_kib;
    steps
        .iter()
        .map(|&(name, rss)| {
            let d = (rss as f64 - prev as f64) / n.max(1) as f64;
            prev = rss;
            (name, d)
        })
        .collect()
}

async fn settled_rss(pid: u32) -> u64 {
    tokio::time::sleep(Duration::from_millis(1500)).await;
    memory_kib(pid).map_or(0, |m| m.0)
}

/// One served request on a raw connection, left open (keep-alive) and silent.
async fn idle_connection(addr: &str) -> anyhow::Result<TcpStream> {
    let mut s = TcpStream::connect(addr).await?;
    s.write_all(b"GET /healthz HTTP/1.1\r\nhost: probe\r\n\r\n")
        .await?;
    let mut buf = [0u8; 1024];
    let n = s.read(&mut buf).await?;
    anyhow::ensure!(buf[..n].starts_with(b"HTTP/1.1 200"), "healthz not 200");
    Ok(s)
}

async fn start_run(http: &reqwest::Client, base: &str, i: usize) -> anyhow::Result<String> {
    let conv: Value = http
        .post(format!("{base}/api/conversations"))
        .json(&json!({}))
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    let id = conv["id"].as_str().context("conversation without id")?;
    let run: Value = http
        .post(format!("{base}/api/conversations/{id}/runs"))
        .json(&json!({"query": format!("memory probe {i}: what is 1+1?"), "mode": "native"}))
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    Ok(run["run_id"].as_str().context("no run_id")?.to_string())
}

/// Reads a run's stream to its end; Ok when it ends with `done` `completed`.
async fn subscribe(http: reqwest::Client, base: String, run: String) -> anyhow::Result<()> {
    let resp = http
        .get(format!("{base}/api/runs/{run}/events"))
        .header("accept", "text/event-stream")
        .send()
        .await?
        .error_for_status()?;
    let mut events = resp.bytes_stream().eventsource();
    let mut last = None;
    while let Some(ev) = events.next().await {
        last = Some(ev.map_err(|e| anyhow::anyhow!("run {run}: SSE error: {e}"))?);
    }
    let done = last.filter(|ev| ev.event == "done");
    let status = done
        .and_then(|ev| serde_json::from_str::<Value>(&ev.data).ok())
        .and_then(|d| d["status"].as_str().map(str::to_string));
    anyhow::ensure!(
        status.as_deref() == Some("completed"),
        "run {run}: the stream ended with {status:?}, not done completed"
    );
    Ok(())
}

/// Where [`probe`] stops for a snapshot taken from outside: after reading `step`, for `hold`.
#[derive(Clone, Copy, Debug)]
pub struct Pause {
    pub step: u8,
    pub hold: Duration,
}

impl Pause {
    /// Announces the pause on stdout (a script waits for the line) and holds the server there.
    async fn at(pause: Option<Pause>, step: u8, pid: u32) {
        if let Some(p) = pause.filter(|p| p.step == step) {
            println!("memory: paused at step {step} (server pid {pid})");
            tokio::time::sleep(p.hold).await;
        }
    }
}

pub async fn probe(
    http: &reqwest::Client,
    n: usize,
    hold: Duration,
    pause: Option<Pause>,
) -> anyhow::Result<bool> {
    let flags = MockFlags {
        latency_ms: 200,
        tokens_per_s: 50.0,
        answer_tokens: 100,
        tool_iterations: 3,
        first_call_latency_ms: Some(hold.as_millis() as u64),
        ..MockFlags::default()
    };
    // Step 1 on a stack of its own: freed connection memory stays with the allocator and would
    // hide the next steps' bytes.
    let stack = Stack::start(http, &flags, &[]).await?;
    let pid = stack.server.pid;
    let addr = stack.server.base.trim_start_matches("http://").to_string();
    let idle_1 = settled_rss(pid).await;
    let mut conns = Vec::with_capacity(n);
    for _ in 0..n {
        conns.push(idle_connection(&addr).await?);
    }
    let connections = [("1. idle HTTP connection", settled_rss(pid).await)];
    drop(conns);
    stack.stop().await?;

    let stack = Stack::start(http, &flags, &[]).await?;
    let (base, pid) = (stack.server.base.clone(), stack.server.pid);
    let idle = settled_rss(pid).await;
    let mut steps = Vec::new();
    let t0 = tokio::time::Instant::now();
    let runs: Vec<String> = futures::stream::iter(0..n)
        .map(|i| start_run(http, &base, i))
        .buffer_unordered(64)
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .collect::<anyhow::Result<_>>()?;
    let started = t0.elapsed();
    steps.push(("2. run waiting on its LLM call", settled_rss(pid).await));
    Pause::at(pause, 2, pid).await;
    let subs: Vec<_> = runs
        .iter()
        .map(|r| tokio::spawn(subscribe(http.clone(), base.clone(), r.clone())))
        .collect();
    steps.push(("3. SSE subscriber", settled_rss(pid).await));
    Pause::at(pause, 3, pid).await;
    anyhow::ensure!(
        t0.elapsed() < hold,
        "steps 2-3 took {:?}, longer than the hold {hold:?}: give a longer --hold-s",
        t0.elapsed()
    );
    // The median run's answer is half streamed at its start + hold + 2 × 200 ms (two more tool
    // calls) + 200 ms (the final call) + 200 ms (synthesis' first byte) + 1 s (50 of 100 tokens).
    let mid = t0 + started / 2 + hold + Duration::from_millis(1800);
    tokio::time::sleep_until(mid).await;
    steps.push((
        "4. half the answer streamed",
        memory_kib(pid).map_or(0, |m| m.0),
    ));
    Pause::at(pause, 4, pid).await;
    let mut errors = 0;
    for s in subs {
        if let Err(e) = s.await.context("subscriber task")? {
            errors += 1;
            eprintln!("{e:#}");
        }
    }
    stack.stop().await?;
    print(n, (idle_1, &connections), (idle, &steps), errors);
    Ok(errors == 0)
}

type Readings<'a> = (u64, &'a [(&'static str, u64)]);

fn print(n: usize, connections: Readings, runs: Readings, errors: usize) {
    println!(
        "== memory per run, {n} runs (RSS deltas after 1.5 s settles; idle {} / {} KiB)",
        connections.0, runs.0
    );
    let rows = deltas(connections.0, connections.1, n);
    let rest = deltas(runs.0, runs.1, n);
    for (name, kib) in rows.iter().chain(&rest) {
        println!("  {name:<32} {kib:>7.1} KiB per run");
    }
    let total: f64 = rest.iter().map(|r| r.1).sum();
    println!("  {:<32} {total:>7.1} KiB per run", "steps 2-4 together");
    println!(
        "  streams verified: {} of {n} ended with done completed",
        n - errors
    );
}

#[cfg(test)]
mod tests;
