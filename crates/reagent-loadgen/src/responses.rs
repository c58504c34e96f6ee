//! `responses`: background responses resumed under load (docs/api.md, the Responses API).
//! Each conversation creates a background response with `stream: true`, reads its events up to
//! the first `response.output_text.delta` (or, with `--cut-after N`, N events), drops the
//! connection — which must not cancel a background run — and resumes with
//! `GET /v1/responses/{id}?stream=true&starting_after=<last sequence number>` to `[DONE]`.
//! Checked per response: sequence numbers 0, 1, 2 … over both connections with none lost or
//! repeated, `response.completed` as the last event and `data: [DONE]` after it. Reports
//! runs/s, the wall time of a whole response and of the resume (request → first event), and
//! the server's CPU per response.

use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context};
use eventsource_stream::Eventsource;
use futures::StreamExt;
use serde_json::{json, Value};
use tokio::sync::Semaphore;

use crate::procinfo::cpu_seconds;
use crate::spawn::{MockFlags, Stack};
use crate::stats::Summary;

#[derive(clap::Args)]
pub struct ResponsesArgs {
    #[arg(long, short = 'n', default_value_t = 200)]
    runs: usize,
    #[arg(long, short = 'c', default_value_t = 20)]
    concurrency: usize,
    #[arg(long, default_value_t = 40)]
    tokens: usize,
    /// The answer's pace: the resume follows it live.
    #[arg(long, default_value_t = 100.0)]
    tokens_per_s: f64,
    /// Events read before the connection is dropped; 0: up to the first text delta.
    #[arg(long, default_value_t = 0)]
    cut_after: usize,
}

/// One response's two wall times (ms): whole, and resume → first event.
struct Timing {
    whole: f64,
    resume: f64,
}

pub async fn responses(http: &reqwest::Client, shape: ResponsesArgs) -> anyhow::Result<bool> {
    let flags = MockFlags {
        tool_iterations: 1,
        answer_tokens: shape.tokens,
        tokens_per_s: shape.tokens_per_s,
        ..MockFlags::default()
    };
    let stack = Stack::start(http, &flags, &[]).await?;
    let (base, pid) = (stack.server.base.clone(), stack.server.pid);
    let gate = Arc::new(Semaphore::new(shape.concurrency.max(1)));
    let (cpu0, t0) = (cpu_seconds(pid).unwrap_or(0.0), Instant::now());
    let tasks: Vec<_> = (0..shape.runs)
        .map(|_| {
            let (http, base, gate) = (http.clone(), base.clone(), gate.clone());
            let cut = shape.cut_after;
            tokio::spawn(async move {
                let _permit = gate.acquire_owned().await;
                one(&http, &base, cut).await
            })
        })
        .collect();
    let (mut timings, mut errors) = (Vec::new(), Vec::new());
    for t in tasks {
        match t.await {
            Ok(Ok(timing)) => timings.push(timing),
            Ok(Err(e)) => errors.push(format!("{e:#}")),
            Err(e) => errors.push(e.to_string()),
        }
    }
    let wall = t0.elapsed().as_secs_f64();
    let cpu = cpu_seconds(pid).unwrap_or(cpu0) - cpu0;
    stack.stop().await?;
    let whole = Summary::of(&timings.iter().map(|t| t.whole).collect::<Vec<_>>());
    let resume = Summary::of(&timings.iter().map(|t| t.resume).collect::<Vec<_>>());
    println!(
        "== responses: {} background responses, {} in flight, each dropped and resumed by starting_after (1 tool call, {}-token answer at {} tokens/s)",
        shape.runs, shape.concurrency, shape.tokens, shape.tokens_per_s
    );
    println!(
        "  {:.1} responses/s; whole p50 {:.1} p99 {:.1} ms; resume → first event p50 {:.2} p99 {:.2} ms; server CPU {:.0} µs/response; {} errors",
        timings.len() as f64 / wall,
        whole.p50,
        whole.p99,
        resume.p50,
        resume.p99,
        1e6 * cpu / shape.runs.max(1) as f64,
        errors.len()
    );
    for e in errors.iter().take(5) {
        println!("  error: {e}");
    }
    Ok(errors.is_empty())
}

/// The sequence checker over both connections.
struct Seen {
    next: u64,
    last_type: String,
    done: bool,
}

impl Seen {
    /// Takes one SSE event; Ok(true) when it is a text delta.
    fn take(&mut self, event: &str, data: &str) -> anyhow::Result<bool> {
        if self.done {
            bail!("an event after [DONE]: {event}");
        }
        if data == "[DONE]" {
            self.done = true;
            return Ok(false);
        }
        let v: Value = serde_json::from_str(data).context("event data")?;
        let seq = v["sequence_number"]
            .as_u64()
            .context("no sequence_number")?;
        if seq != self.next {
            bail!(
                "sequence number {seq} where {} was due ({event})",
                self.next
            );
        }
        if v["type"].as_str() != Some(event) {
            bail!("event {event} with type {}", v["type"]);
        }
        self.next += 1;
        self.last_type = event.to_string();
        Ok(event == "response.output_text.delta")
    }
}

async fn one(http: &reqwest::Client, base: &str, cut_after: usize) -> anyhow::Result<Timing> {
    let t0 = Instant::now();
    let first = http
        .post(format!("{base}/v1/responses"))
        .json(
            &json!({"model": "reagent", "input": "Look it up and answer.",
                      "background": true, "stream": true}),
        )
        .send()
        .await?;
    anyhow::ensure!(
        first.status().is_success(),
        "create: HTTP {}",
        first.status()
    );
    let mut seen = Seen {
        next: 0,
        last_type: String::new(),
        done: false,
    };
    let mut id = None;
    let mut events = first.bytes_stream().eventsource();
    while let Some(ev) = events.next().await {
        let ev = ev.context("first stream")?;
        if id.is_none() {
            let v: Value = serde_json::from_str(&ev.data).context("first event")?;
            id = v["response"]["id"].as_str().map(str::to_string);
        }
        let delta = seen.take(&ev.event, &ev.data)?;
        if (cut_after == 0 && delta) || (cut_after > 0 && seen.next as usize >= cut_after) {
            break;
        }
    }
    drop(events);
    let id = id.context("no response id in the first event")?;
    if seen.done || seen.next == 0 {
        bail!("{id}: the stream ended before the cut");
    }
    let t1 = Instant::now();
    let after = seen.next - 1;
    let resumed = http
        .get(format!(
            "{base}/v1/responses/{id}?stream=true&starting_after={after}"
        ))
        .send()
        .await?;
    anyhow::ensure!(
        resumed.status().is_success(),
        "resume: HTTP {}",
        resumed.status()
    );
    let mut resume_ms = None;
    let mut events = resumed.bytes_stream().eventsource();
    while let Some(ev) = events.next().await {
        let ev = ev.context("resumed stream")?;
        resume_ms.get_or_insert_with(|| t1.elapsed().as_secs_f64() * 1000.0);
        seen.take(&ev.event, &ev.data).with_context(|| id.clone())?;
    }
    if !seen.done || seen.last_type != "response.completed" {
        bail!(
            "{id}: ended with {:?}, [DONE] {}",
            seen.last_type,
            seen.done
        );
    }
    Ok(Timing {
        whole: t0.elapsed().as_secs_f64() * 1000.0,
        resume: resume_ms.unwrap_or(f64::NAN),
    })
}

#[cfg(test)]
mod tests;
