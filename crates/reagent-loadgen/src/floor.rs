//! `floor`: the harness's own token latency, without reagent in the middle. N streamed
//! completions are read straight from a spawned mock provider, all at once, with the same
//! schedule as the "held" scenario's answers; each token's receipt time minus the stamp the mock
//! wrote into it is the floor under reagent's token → SSE figure on this machine (mock, loopback
//! and client sharing the cores).
//!
//! `floor --relay`: the same load through the server and then through the minimal relay
//! ([`crate::relay`]), each on a fresh mock; both processes' CPU per streamed token from `/proc`
//! and the ratio server / relay.

use std::time::{Duration, Instant};

use anyhow::Context;
use futures::StreamExt;
use reagent_mock::{token_stamps, unix_micros};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

use crate::cost::{ratio, show_us, us_per};
use crate::load::{self, Load};
use crate::procinfo::{memory_kib, CpuMeter, MachineMeter};
use crate::spawn::{Mock, MockFlags};
use crate::stats::Summary;

/// The shape of the token load shared by the floor, the relay and the server legs.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub streams: usize,
    pub latency_ms: u64,
    pub tokens_per_s: f64,
    pub answer_tokens: usize,
    /// Stream i starts at `i * ramp / streams`.
    pub ramp: Duration,
}

impl Shape {
    fn mock(&self, tool_iterations: usize) -> MockFlags {
        MockFlags {
            latency_ms: self.latency_ms,
            tokens_per_s: self.tokens_per_s,
            answer_tokens: self.answer_tokens,
            tool_iterations,
            stamp_tokens: true,
            ..MockFlags::default()
        }
    }
}

pub async fn floor(http: &reqwest::Client, shape: Shape) -> anyhow::Result<bool> {
    let t0 = Instant::now();
    let mock = Mock::start(&shape.mock(0)).await?;
    let url = format!("{}/chat/completions", mock.base_url);
    let (s, errors, _) = read_streams(http, &shape, |h| h.post(&url).json(&answer_body())).await?;
    println!(
        "== floor: {} streams straight from the mock ({} tokens at {}/s after {} ms), {:.1} s, errors {errors}",
        shape.streams, shape.answer_tokens, shape.tokens_per_s, shape.latency_ms,
        t0.elapsed().as_secs_f64()
    );
    print_row("token -> client", &s);
    Ok(errors == 0)
}

fn print_row(name: &str, s: &Summary) {
    println!(
        "  {name:<22} n={:<6} p50 {:9.3}  p90 {:9.3}  p99 {:9.3}  max {:9.3} ms",
        s.n, s.p50, s.p90, s.p99, s.max
    );
}

fn answer_body() -> serde_json::Value {
    serde_json::json!({
        "model": "mock-model",
        "stream": true,
        "messages": [{"role": "user", "content": "Write the answer."}],
    })
}

/// The latency summary of every stamped token straight from a mock at 50 tokens/s (the suite's
/// floor row), and the number of failed streams.
pub async fn measure(http: &reqwest::Client, shape: Shape) -> anyhow::Result<(Summary, usize)> {
    let mock = Mock::start(&shape.mock(0)).await?;
    let url = format!("{}/chat/completions", mock.base_url);
    let (s, errors, _) = read_streams(http, &shape, |h| h.post(&url).json(&answer_body())).await?;
    Ok((s, errors))
}

/// Opens `shape.streams` streams made by `request`, reads each to its end and keeps every
/// stamped token's latency: (summary, failed streams, tokens received). A stream that did not
/// deliver all its tokens counts as failed.
async fn read_streams(
    http: &reqwest::Client,
    shape: &Shape,
    request: impl Fn(&reqwest::Client) -> reqwest::RequestBuilder,
) -> anyhow::Result<(Summary, usize, usize)> {
    let t0 = tokio::time::Instant::now();
    let n = shape.streams.max(1) as u32;
    let tasks: Vec<_> = (0..shape.streams)
        .map(|i| {
            let req = request(http);
            let start = t0 + shape.ramp * i as u32 / n;
            tokio::spawn(async move {
                tokio::time::sleep_until(start).await;
                let mut lat = Vec::new();
                let resp = req.send().await?.error_for_status()?;
                let mut bytes = resp.bytes_stream();
                // A stamp can straddle two reads: keep the unfinished tail of the last one.
                let mut carry = String::new();
                while let Some(chunk) = bytes.next().await {
                    let now = unix_micros();
                    carry.push_str(&String::from_utf8_lossy(&chunk?));
                    let cut = carry.rfind('\n').map_or(0, |i| i + 1);
                    for stamp in token_stamps(&carry[..cut]) {
                        lat.push(now.saturating_sub(stamp) as f64 / 1000.0);
                    }
                    carry.drain(..cut);
                }
                anyhow::Ok(lat)
            })
        })
        .collect();
    let (mut lat, mut errors) = (Vec::new(), 0);
    for t in tasks {
        match t.await.context("stream task")? {
            Ok(l) if l.len() == shape.answer_tokens => lat.extend(l),
            Ok(l) => {
                errors += 1;
                eprintln!(
                    "stream delivered {} of {} tokens",
                    l.len(),
                    shape.answer_tokens
                );
            }
            Err(e) => {
                errors += 1;
                eprintln!("stream failed: {e:#}");
            }
        }
    }
    let tokens = lat.len();
    Ok((Summary::of(&lat), errors, tokens))
}

/// What one leg of `floor --relay` cost.
#[derive(Clone, Copy, Debug, Default)]
pub struct Leg {
    pub cpu_s: f64,
    pub tokens: usize,
    pub errors: usize,
    pub machine_busy_pct: f64,
    pub token_ms: Summary,
    /// (peak RSS − idle RSS) / streams, KiB (relay leg only; the streams overlap only partly
    /// when the ramp is longer than a stream).
    pub rss_per_stream_kib: f64,
}

impl Leg {
    pub fn us_per_token(&self) -> Option<f64> {
        us_per(self.cpu_s, self.tokens)
    }
}

/// The relay leg: a fresh mock, the relay as a child process, `shape` through it.
pub async fn relay_leg(http: &reqwest::Client, shape: &Shape) -> anyhow::Result<Leg> {
    let mock = Mock::start(&shape.mock(0)).await?;
    let mut relay = Command::new(std::env::current_exe()?);
    relay.args([
        "relay",
        "--upstream",
        &format!("{}/chat/completions", mock.base_url),
    ]);
    if crate::spawn::llm_http2() {
        relay.arg("--llm-http2");
    }
    let mut child = relay
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .context("cannot start the relay")?;
    let pid = child.id().context("relay has no pid")?;
    let stdout = child.stdout.take().context("relay has no stdout")?;
    let line = tokio::time::timeout(
        Duration::from_secs(20),
        BufReader::new(stdout).lines().next_line(),
    )
    .await
    .context("relay did not start within 20 s")??
    .context("relay exited")?;
    let url = line
        .rsplit(' ')
        .next()
        .context("unexpected relay banner")?
        .to_string();
    let idle = memory_kib(pid).map_or(0, |m| m.0);
    let peak = tokio::spawn(async move {
        let mut peak = 0;
        while let Some((rss, _)) = memory_kib(pid) {
            peak = peak.max(rss);
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        peak
    });
    let (cpu, machine) = (CpuMeter::start(pid), MachineMeter::start());
    let (token_ms, errors, tokens) = read_streams(http, shape, |h| h.get(&url)).await?;
    let (cpu_s, _) = cpu.stop();
    let machine_busy_pct = machine.stop();
    child.kill().await?;
    // The sampler ends once the relay's /proc entry is gone (reaped by this wait).
    child.wait().await?;
    let peak = peak.await.unwrap_or(0);
    Ok(Leg {
        cpu_s,
        tokens,
        errors,
        machine_busy_pct,
        token_ms,
        rss_per_stream_kib: (peak as f64 - idle as f64) / shape.streams.max(1) as f64,
    })
}

/// The server leg: a fresh stack (`tool_iterations` tool calls, then the streamed answer).
pub async fn server_leg(
    http: &reqwest::Client,
    shape: &Shape,
    tool_iterations: usize,
) -> anyhow::Result<Leg> {
    let stack = crate::spawn::Stack::start(http, &shape.mock(tool_iterations), &[]).await?;
    let load = Load {
        conversations: shape.streams,
        concurrency: shape.streams,
        ramp: shape.ramp,
        ..Load::default()
    };
    let r = load::run(http, &stack.server.base, Some(stack.server.pid), &load).await;
    r.print("server leg");
    stack.stop().await?;
    Ok(Leg {
        cpu_s: r.cpu_s,
        tokens: r.tokens_streamed,
        errors: r.errors,
        machine_busy_pct: r.machine_busy_pct,
        token_ms: r.token_ms,
        rss_per_stream_kib: r.rss_per_run_kib,
    })
}

/// `floor --relay`: the server leg, then the relay leg, then the ratio.
pub async fn relay_vs_server(
    http: &reqwest::Client,
    shape: Shape,
    tool_iterations: usize,
) -> anyhow::Result<bool> {
    let server = server_leg(http, &shape, tool_iterations).await?;
    let relay = relay_leg(http, &shape).await?;
    print_relay(&shape, &server, &relay);
    Ok(server.errors == 0 && relay.errors == 0)
}

pub fn print_relay(shape: &Shape, server: &Leg, relay: &Leg) {
    println!(
        "== {} streams × {} tokens at {}/s: CPU per streamed token (all threads, /proc)",
        shape.streams, shape.answer_tokens, shape.tokens_per_s
    );
    for (name, leg) in [("server", server), ("minimal relay", relay)] {
        println!(
            "  {name:<14} {:>10} per token ({:.2} s CPU, {} tokens, {} errors; machine {:.0} % busy)",
            show_us(leg.us_per_token()), leg.cpu_s, leg.tokens, leg.errors, leg.machine_busy_pct
        );
        print_row("  token latency", &leg.token_ms);
        println!("    RSS per stream {:.1} KiB", leg.rss_per_stream_kib);
    }
    match ratio(server.us_per_token(), relay.us_per_token()) {
        Some(r) => println!("  server / relay = {r:.2}×"),
        None => println!("  server / relay = n/a (no tokens or no relay CPU counted)"),
    }
}
