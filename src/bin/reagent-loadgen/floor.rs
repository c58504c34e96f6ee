//! `floor`: the harness's own token latency, without reagent in the middle. N streamed
//! completions are read straight from a spawned mock provider, all at once, with the same
//! schedule as the "held" scenario's answers; each token's receipt time minus the stamp the mock
//! wrote into it is the floor under reagent's token → SSE figure on this machine (mock, loopback
//! and client sharing the cores).

use std::time::Instant;

use anyhow::Context;
use futures::StreamExt;
use reagent::testing::mock_provider::{token_stamps, unix_micros};

use crate::spawn::{Mock, MockFlags};
use crate::stats::Summary;

pub async fn floor(
    http: &reqwest::Client,
    streams: usize,
    latency_ms: u64,
    tokens_per_s: f64,
    answer_tokens: usize,
) -> anyhow::Result<bool> {
    let t0 = Instant::now();
    let (s, errors) = measure(http, streams, latency_ms, tokens_per_s, answer_tokens).await?;
    println!(
        "== floor: {streams} streams straight from the mock ({answer_tokens} tokens at {tokens_per_s}/s after {latency_ms} ms), {:.1} s, errors {errors}",
        t0.elapsed().as_secs_f64()
    );
    println!(
        "  token -> client       n={:<6} p50 {:9.3}  p90 {:9.3}  p99 {:9.3}  max {:9.3} ms",
        s.n, s.p50, s.p90, s.p99, s.max
    );
    Ok(errors == 0)
}

/// The latency summary of every stamped token, and the number of failed streams (a stream
/// that did not deliver all its tokens counts as failed).
pub async fn measure(
    http: &reqwest::Client,
    streams: usize,
    latency_ms: u64,
    tokens_per_s: f64,
    answer_tokens: usize,
) -> anyhow::Result<(Summary, usize)> {
    let mock = Mock::start(&MockFlags {
        latency_ms,
        tokens_per_s,
        answer_tokens,
        stamp_tokens: true,
        ..MockFlags::default()
    })
    .await?;
    let url = format!("{}/chat/completions", mock.base_url);
    let body = serde_json::json!({
        "model": "mock-model",
        "stream": true,
        "messages": [{"role": "user", "content": "Write the answer."}],
    });
    let tasks: Vec<_> = (0..streams)
        .map(|_| {
            let req = http.post(&url).json(&body);
            tokio::spawn(async move {
                let mut lat = Vec::with_capacity(answer_tokens);
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
    let mut lat = Vec::new();
    let mut errors = 0;
    for t in tasks {
        match t.await.context("stream task")? {
            Ok(l) if l.len() == answer_tokens => lat.extend(l),
            Ok(l) => {
                errors += 1;
                eprintln!("stream delivered {} of {answer_tokens} tokens", l.len());
            }
            Err(e) => {
                errors += 1;
                eprintln!("stream failed: {e:#}");
            }
        }
    }
    Ok((Summary::of(&lat), errors))
}
