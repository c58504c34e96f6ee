//! `facade`: the OpenAI-compatible API's own cost. The same short run (one tool call and a
//! short answer from a zero-latency mock) through `POST /api/chat` and through
//! `POST /v1/chat/completions` (streamed, the implicit `reagent` agent), one run at a time, in
//! alternating blocks so that drift on a shared machine hits both alike. Reports per run: wall
//! time from request to the stream's end, and the server's CPU time.

use std::time::Instant;

use anyhow::Context;
use serde_json::json;

use crate::procinfo::cpu_seconds;
use crate::spawn::MockFlags;
use crate::spawn::Stack;
use crate::stats::Summary;

/// Runs per block of one kind before switching to the other.
const BLOCK: usize = 20;

#[derive(Clone, Copy, PartialEq)]
enum Api {
    Native,
    OpenAi,
}

#[derive(Default)]
struct Tally {
    wall_ms: Vec<f64>,
    cpu_s: f64,
}

pub async fn facade(http: &reqwest::Client, runs: usize, warmup: usize) -> anyhow::Result<bool> {
    let flags = MockFlags {
        tool_iterations: 1,
        answer_tokens: 20,
        ..MockFlags::default()
    };
    let stack = Stack::start(http, &flags, &[]).await?;
    let (base, pid) = (stack.server.base.clone(), stack.server.pid);
    for i in 0..warmup {
        let api = if i % 2 == 0 { Api::Native } else { Api::OpenAi };
        one(http, &base, api).await?;
    }
    let (mut native, mut openai) = (Tally::default(), Tally::default());
    let mut done = 0;
    while done < runs {
        for (api, tally) in [(Api::Native, &mut native), (Api::OpenAi, &mut openai)] {
            let cpu0 = cpu_seconds(pid).unwrap_or(0.0);
            for _ in 0..BLOCK.min(runs - done) {
                tally.wall_ms.push(one(http, &base, api).await?);
            }
            tally.cpu_s += cpu_seconds(pid).unwrap_or(cpu0) - cpu0;
        }
        done += BLOCK.min(runs - done);
    }
    stack.stop().await?;
    println!(
        "== facade: {runs} runs each, one at a time (1 tool call, 20-token answer, mock at 0 ms)"
    );
    let row = |name: &str, t: &Tally| {
        let s = Summary::of(&t.wall_ms);
        let cpu_ms = 1000.0 * t.cpu_s / t.wall_ms.len().max(1) as f64;
        println!(
            "  {name:<24} wall p50 {:7.3}  p90 {:7.3}  mean {:7.3} ms   server CPU {cpu_ms:6.3} ms/run",
            s.p50,
            s.p90,
            mean(&t.wall_ms)
        );
        (s.p50, cpu_ms)
    };
    let (api_p50, api_cpu) = row("/api/chat", &native);
    let (v1_p50, v1_cpu) = row("/v1/chat/completions", &openai);
    println!(
        "  facade cost              wall p50 {:+.3} ms ({:+.1} %)   server CPU {:+.3} ms/run ({:+.1} %)",
        v1_p50 - api_p50,
        100.0 * (v1_p50 - api_p50) / api_p50.max(1e-9),
        v1_cpu - api_cpu,
        100.0 * (v1_cpu - api_cpu) / api_cpu.max(1e-9),
    );
    Ok(true)
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

/// One run to the end of its stream; its wall time in milliseconds.
async fn one(http: &reqwest::Client, base: &str, api: Api) -> anyhow::Result<f64> {
    let t0 = Instant::now();
    let request = match api {
        Api::Native => http
            .post(format!("{base}/api/chat"))
            .json(&json!({"query": "Look it up and answer."})),
        Api::OpenAi => http
            .post(format!("{base}/v1/chat/completions"))
            .json(&json!({
                "model": "reagent",
                "stream": true,
                "messages": [{"role": "user", "content": "Look it up and answer."}],
            })),
    };
    let response = request.send().await.context("request")?;
    anyhow::ensure!(response.status().is_success(), "HTTP {}", response.status());
    let body = response.text().await.context("stream")?;
    let complete = match api {
        Api::Native => body.contains("event: done"),
        Api::OpenAi => body.ends_with("data: [DONE]\n\n"),
    };
    anyhow::ensure!(complete, "the stream ended early: {body}");
    Ok(t0.elapsed().as_secs_f64() * 1000.0)
}
