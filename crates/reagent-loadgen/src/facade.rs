//! `facade`: the protocol facades' own cost. The same short run (one tool call and an answer of
//! `--tokens` tokens from a zero-latency mock) through `POST /api/chat` and through
//! `POST /v1/chat/completions` and `POST /v1/responses` (streamed), `POST /ag-ui/reagent` and
//! `POST /ai-sdk/reagent` (the implicit `reagent` agent, a new thread each) and A2A's
//! `SendStreamingMessage` at `POST /a2a/reagent` (a new task each), one run at a time,
//! in alternating blocks so that drift on a shared machine hits all alike. Reports per run: wall
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
    Responses,
    AgUi,
    AiSdk,
    A2a,
}

const APIS: [(Api, &str); 6] = [
    (Api::Native, "/api/chat"),
    (Api::OpenAi, "/v1/chat/completions"),
    (Api::Responses, "/v1/responses"),
    (Api::AgUi, "/ag-ui/reagent"),
    (Api::AiSdk, "/ai-sdk/reagent"),
    (Api::A2a, "/a2a/reagent"),
];

#[derive(Default)]
struct Tally {
    wall_ms: Vec<f64>,
    cpu_s: f64,
}

pub async fn facade(
    http: &reqwest::Client,
    runs: usize,
    warmup: usize,
    tokens: usize,
) -> anyhow::Result<bool> {
    let flags = MockFlags {
        tool_iterations: 1,
        answer_tokens: tokens,
        ..MockFlags::default()
    };
    let stack = Stack::start(http, &flags, &[]).await?;
    let (base, pid) = (stack.server.base.clone(), stack.server.pid);
    let mut n = 0;
    for i in 0..warmup {
        n += 1;
        one(http, &base, APIS[i % APIS.len()].0, n).await?;
    }
    let mut tallies: Vec<Tally> = APIS.iter().map(|_| Tally::default()).collect();
    let mut done = 0;
    let mut order: Vec<usize> = (0..APIS.len()).collect();
    while done < runs {
        for &i in &order {
            let cpu0 = cpu_seconds(pid).unwrap_or(0.0);
            for _ in 0..BLOCK.min(runs - done) {
                n += 1;
                tallies[i]
                    .wall_ms
                    .push(one(http, &base, APIS[i].0, n).await?);
            }
            tallies[i].cpu_s += cpu_seconds(pid).unwrap_or(cpu0) - cpu0;
        }
        // A B C … then … C B A: the database grows as runs are added, and no API should always
        // run on a smaller one than the others.
        order.reverse();
        done += BLOCK.min(runs - done);
    }
    stack.stop().await?;
    println!(
        "== facade: {runs} runs each, one at a time (1 tool call, {tokens}-token answer, mock at 0 ms)"
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
    let (api_p50, api_cpu) = row(APIS[0].1, &tallies[0]);
    let others: Vec<(&str, f64, f64)> = APIS[1..]
        .iter()
        .zip(&tallies[1..])
        .map(|((_, name), t)| {
            let (p50, cpu) = row(name, t);
            (*name, p50, cpu)
        })
        .collect();
    for (name, p50, cpu) in others {
        println!(
            "  {name:<24} cost wall p50 {:+.3} ms ({:+.1} %)   server CPU {:+.3} ms/run ({:+.1} %, {:+.4} ms/token)",
            p50 - api_p50,
            100.0 * (p50 - api_p50) / api_p50.max(1e-9),
            cpu - api_cpu,
            100.0 * (cpu - api_cpu) / api_cpu.max(1e-9),
            (cpu - api_cpu) / tokens.max(1) as f64,
        );
    }
    Ok(true)
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

/// One run to the end of its stream; its wall time in milliseconds.
async fn one(http: &reqwest::Client, base: &str, api: Api, n: usize) -> anyhow::Result<f64> {
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
        Api::Responses => http.post(format!("{base}/v1/responses")).json(&json!({
            "model": "reagent", "stream": true, "input": "Look it up and answer.",
        })),
        Api::AgUi => http.post(format!("{base}/ag-ui/reagent")).json(&json!({
            "threadId": format!("bench-{n}"), "runId": format!("r{n}"),
            "messages": [{"id": "u1", "role": "user", "content": "Look it up and answer."}],
        })),
        Api::AiSdk => http.post(format!("{base}/ai-sdk/reagent")).json(&json!({
            "id": format!("bench-{n}"), "trigger": "submit-message",
            "messages": [{"id": "u1", "role": "user",
                          "parts": [{"type": "text", "text": "Look it up and answer."}]}],
        })),
        Api::A2a => http.post(format!("{base}/a2a/reagent")).json(&json!({
            "jsonrpc": "2.0", "id": n, "method": "SendStreamingMessage",
            "params": {"message": {"role": "ROLE_USER", "messageId": format!("m{n}"),
                                   "parts": [{"text": "Look it up and answer."}]}},
        })),
    };
    let response = request.send().await.context("request")?;
    anyhow::ensure!(response.status().is_success(), "HTTP {}", response.status());
    let body = response.text().await.context("stream")?;
    let complete = match api {
        Api::Native => body.contains("event: done"),
        Api::OpenAi | Api::AiSdk => body.ends_with("data: [DONE]\n\n"),
        Api::Responses => {
            body.contains("event: response.completed") && body.ends_with("data: [DONE]\n\n")
        }
        Api::AgUi => body.contains("\"type\":\"RUN_FINISHED\""),
        Api::A2a => body.contains("\"TASK_STATE_COMPLETED\""),
    };
    anyhow::ensure!(complete, "the stream ended early: {body}");
    Ok(t0.elapsed().as_secs_f64() * 1000.0)
}
