//! The benchmark suite: every target scenario of the performance issue on a freshly spawned
//! stack each (so idle RSS and CPU belong to that scenario alone), repeated, with medians.
//!
//! The scenarios themselves are in `suite/scenarios.rs`; here are the stack they run on, the
//! figures they fill and the repeat loop with its medians.

use std::path::Path;
use std::time::Instant;

use serde_json::{json, Value};

use crate::load::LoadReport;
use crate::stats::{median, Summary};
use crate::table::Figures;

mod scenarios;

use scenarios::{history, overhead, scale, streams, throughput};

/// Median round trip of `samples` direct calls to the mock with a native request holding
/// `messages` messages (system, user, then assistant tool-call / tool-result pairs) — what the
/// server sends at that history size, minus the server.
pub async fn mock_rtt_ms(
    http: &reqwest::Client,
    mock_url: &str,
    messages: usize,
    samples: usize,
) -> anyhow::Result<f64> {
    let mut msgs = vec![
        json!({"role": "system", "content": "You are a helpful assistant that uses tools. ".repeat(20)}),
        json!({"role": "user", "content": "load test conversation 0: what is 1+1?"}),
    ];
    let mut i = 0;
    while msgs.len() + 2 <= messages.max(4) {
        msgs.push(json!({"role": "assistant", "content": null, "tool_calls": [{"id": format!("call_mock_{i}"), "type": "function", "function": {"name": "calculator", "arguments": format!("{{\"expression\":\"{i}+1\"}}")}}]}));
        msgs.push(json!({"role": "tool", "tool_call_id": format!("call_mock_{i}"), "content": format!("{}", i + 1)}));
        i += 1;
    }
    let body = json!({
        "model": "mock-model", "messages": msgs, "tool_choice": "auto",
        "tools": [{"type": "function", "function": {"name": "calculator", "description": "Evaluates an arithmetic expression.", "parameters": {"type": "object", "properties": {"expression": {"type": "string"}}, "required": ["expression"]}}}],
    })
    .to_string();
    let url = format!("{mock_url}/chat/completions");
    let mut times = Vec::with_capacity(samples);
    for k in 0..samples + 5 {
        let t = Instant::now();
        let r = http
            .post(&url)
            .header("content-type", "application/json")
            .body(body.clone())
            .send()
            .await?;
        r.bytes().await?;
        if k >= 5 {
            times.push(t.elapsed().as_secs_f64() * 1e3);
        }
    }
    Ok(median(&times))
}

struct Ctx {
    http: reqwest::Client,
    quick: bool,
    /// Scenarios to run; empty = all.
    only: Vec<String>,
    errors: Vec<String>,
}

impl Ctx {
    fn runs(&self, scenario: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|o| o == scenario)
    }

    fn keep(&mut self, name: &str, r: &LoadReport) {
        r.print(name);
        self.errors
            .extend(r.error_samples.iter().map(|e| format!("{name}: {e}")));
        if r.errors > r.error_samples.len() {
            self.errors
                .push(format!("{name}: {} runs with errors in all", r.errors));
        }
    }
}

/// Server CPU per streamed token and per run, the machine's busy share and its saturation flag.
fn costs_into(f: &mut Figures, key: &str, r: &LoadReport) {
    if let Some(us) = r.cpu_us_per_token {
        f.insert(format!("{key}_cpu_us_per_token"), us);
    }
    if let Some(us) = r.cpu_us_per_run {
        f.insert(format!("{key}_cpu_us_per_run"), us);
    }
    f.insert(format!("{key}_machine_busy_pct"), r.machine_busy_pct);
}

fn summary_into(f: &mut Figures, key: &str, s: &Summary) {
    if s.n > 0 {
        f.insert(format!("{key}_p50"), s.p50);
        f.insert(format!("{key}_p99"), s.p99);
        f.insert(format!("{key}_max"), s.max);
    }
}

/// The suite's scenarios, in order, by the names `--only` takes.
pub const SCENARIOS: [&str; 5] = ["overhead", "history", "scale", "streams", "throughput"];

async fn one_repeat(ctx: &mut Ctx) -> anyhow::Result<Figures> {
    let mut f = Figures::new();
    if ctx.runs("overhead") {
        overhead(ctx, &mut f, "native").await?;
        overhead(ctx, &mut f, "json").await?;
    }
    if ctx.runs("history") {
        history(ctx, &mut f).await?;
    }
    let sizes: &[usize] = match (ctx.runs("scale"), ctx.quick) {
        (false, _) => &[],
        (true, true) => &[10, 100],
        (true, false) => &[10, 100, 1000, 2000],
    };
    for &n in sizes {
        scale(ctx, &mut f, n).await?;
    }
    let rates: &[u32] = if ctx.runs("streams") {
        &[10, 20, 50]
    } else {
        &[]
    };
    for &rate in rates {
        streams(ctx, &mut f, rate).await?;
    }
    if ctx.runs("throughput") {
        throughput(ctx, &mut f).await?;
    }
    Ok(f)
}

/// `only`: the scenarios to run ([`SCENARIOS`]); empty = all.
pub async fn suite(
    quick: bool,
    repeat: usize,
    only: Vec<String>,
    out: &Path,
) -> anyhow::Result<bool> {
    if let Some(bad) = only.iter().find(|o| !SCENARIOS.contains(&o.as_str())) {
        anyhow::bail!(
            "unknown scenario {bad:?}; the scenarios: {}",
            SCENARIOS.join(", ")
        );
    }
    let mut ctx = Ctx {
        http: crate::http_client()?,
        quick,
        only,
        errors: vec![],
    };
    let t0 = Instant::now();
    let mut repeats = Vec::new();
    for i in 0..repeat {
        println!("\n######## repeat {} of {repeat}", i + 1);
        repeats.push(one_repeat(&mut ctx).await?);
    }
    let mut medians = Figures::new();
    let keys: std::collections::BTreeSet<&String> = repeats.iter().flat_map(|r| r.keys()).collect();
    for k in keys {
        let v: Vec<f64> = repeats.iter().filter_map(|r| r.get(k).copied()).collect();
        medians.insert(k.clone(), median(&v));
    }
    let table = crate::table::table(&medians, repeat, quick);
    // With --only, the rows of the scenarios not run (no figure: NaN) are left out.
    let rows = table
        .lines()
        .filter(|l| ctx.only.is_empty() || !l.contains("NaN"));
    println!("\n{}", rows.collect::<Vec<_>>().join("\n"));
    let doc: Value = json!({
        "quick": quick, "repeat": repeat, "elapsed_s": t0.elapsed().as_secs_f64(),
        "median": medians, "repeats": repeats, "errors": ctx.errors,
    });
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(out, serde_json::to_string_pretty(&doc)?)?;
    println!(
        "results written to {} ({:.0} s)",
        out.display(),
        t0.elapsed().as_secs_f64()
    );
    for e in &ctx.errors {
        println!("ERROR {e}");
    }
    Ok(ctx.errors.is_empty())
}

/// Where `suite` writes its JSON without `--out`: the whole suite's file (the plot's), or with
/// `--only` a file of its own, so that one scenario's rerun keeps the whole suite's figures.
pub fn default_out(only: &[String]) -> std::path::PathBuf {
    match only.is_empty() {
        true => "target/benchmarks.json".into(),
        false => "target/benchmarks-only.json".into(),
    }
}

#[cfg(test)]
mod tests;
