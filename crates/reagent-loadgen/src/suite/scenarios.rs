//! The suite's scenarios, each on a freshly spawned [`Stack`]: the figures they add to a
//! repeat's [`Figures`].

use std::time::Duration;

use super::{costs_into, mock_rtt_ms, summary_into, Ctx};
use crate::load::{self, Load};
use crate::procinfo::memory_kib;
use crate::spawn::MockFlags;
use crate::spawn::Stack;
use crate::stats::{median, Summary};
use crate::table::Figures;

/// Per-iteration overhead: `tool_end` gaps at the client minus the mock's direct round trip.
pub(super) async fn overhead(ctx: &mut Ctx, f: &mut Figures, mode: &str) -> anyhow::Result<()> {
    let k = 10;
    // The first loop call waits 50 ms so the client is attached and waiting before the
    // zero-latency iterations start (else the first events arrive in one read).
    let flags = MockFlags {
        tool_iterations: k,
        answer_tokens: 20,
        first_call_latency_ms: Some(50),
        ..MockFlags::default()
    };
    let stack = Stack::start(&ctx.http, &flags, &[]).await?;
    let load = Load {
        conversations: if ctx.quick { 10 } else { 40 },
        concurrency: 1,
        mode: mode.into(),
        ..Load::default()
    };
    let r = load::run(&ctx.http, &stack.server.base, Some(stack.server.pid), &load).await;
    ctx.keep(
        &format!("overhead per iteration ({mode}, 1 run at a time, K={k})"),
        &r,
    );
    let base = mock_rtt_ms(&ctx.http, &stack.mock.base_url, 12, 100).await?;
    let net: Vec<f64> = r.gaps.iter().map(|(_, g)| g - base).collect();
    let s = Summary::of(&net);
    println!(
        "  mock round trip {base:.3} ms; overhead = gap − round trip: p50 {:.3} p99 {:.3} ms",
        s.p50, s.p99
    );
    f.insert(format!("overhead_{mode}_mock_rtt_ms"), base);
    summary_into(f, &format!("overhead_{mode}_ms"), &s);
    summary_into(f, &format!("overhead_{mode}_gap_ms"), &r.iter_gap_ms);
    costs_into(f, &format!("overhead_{mode}"), &r);
    stack.stop().await
}

/// Overhead per iteration at 10, 100, 1000 messages of history: one long run per repeat.
pub(super) async fn history(ctx: &mut Ctx, f: &mut Figures) -> anyhow::Result<()> {
    let sizes: &[usize] = if ctx.quick {
        &[10, 100]
    } else {
        &[10, 100, 1000]
    };
    let max_size = sizes.iter().copied().max().unwrap_or(10);
    let k = max_size / 2 + 10;
    // The first loop call waits 50 ms so the client is attached and waiting before the
    // zero-latency iterations start (else the first events arrive in one read).
    let flags = MockFlags {
        tool_iterations: k,
        answer_tokens: 20,
        first_call_latency_ms: Some(50),
        ..MockFlags::default()
    };
    let extra = [("REACT_MAX_ITERATIONS", (k + 50).to_string())];
    let stack = Stack::start(&ctx.http, &flags, &extra).await?;
    let load = Load {
        conversations: if ctx.quick { 1 } else { 3 },
        concurrency: 1,
        mode: "native".into(),
        ..Load::default()
    };
    let r = load::run(&ctx.http, &stack.server.base, Some(stack.server.pid), &load).await;
    ctx.keep(&format!("history growth (native, K={k})"), &r);
    costs_into(f, "history", &r);
    for &m in sizes {
        // Gap g (tool_end g → g+1) spans the LLM call whose request holds 2 + 2g messages.
        let centre = (m.saturating_sub(2)) / 2;
        let (lo, hi) = (centre.saturating_sub(5).max(1), centre + 5);
        let base = mock_rtt_ms(&ctx.http, &stack.mock.base_url, m, 30).await?;
        let net: Vec<f64> = r
            .gaps
            .iter()
            .filter(|(g, _)| (lo..=hi).contains(g))
            .map(|(_, gap)| gap - base)
            .collect();
        let s = Summary::of(&net);
        println!(
            "  {m:>5} messages: mock round trip {base:.3} ms, overhead p50 {:.3} p99 {:.3} ms (n={})",
            s.p50, s.p99, s.n
        );
        f.insert(format!("history_{m}_mock_rtt_ms"), base);
        summary_into(f, &format!("history_{m}_overhead_ms"), &s);
    }
    stack.stop().await
}

/// The held-load scenario at `n` concurrent runs: 3 iterations at 200 ms, 100 tokens at 50/s.
pub(super) async fn scale(ctx: &mut Ctx, f: &mut Figures, n: usize) -> anyhow::Result<()> {
    let flags = MockFlags {
        latency_ms: 200,
        tokens_per_s: 50.0,
        answer_tokens: 100,
        tool_iterations: 3,
        stamp_tokens: true,
        ..MockFlags::default()
    };
    let stack = Stack::start(&ctx.http, &flags, &[]).await?;
    let load = Load {
        conversations: n,
        concurrency: n,
        mode: "native".into(),
        ..Load::default()
    };
    let r = load::run(&ctx.http, &stack.server.base, Some(stack.server.pid), &load).await;
    ctx.keep(
        &format!("{n} concurrent runs (3 × 200 ms + 100 tokens at 50/s)"),
        &r,
    );
    let key = format!("scale_{n}");
    summary_into(f, &format!("{key}_run_ms"), &r.run_ms);
    summary_into(f, &format!("{key}_ttfe_ms"), &r.ttfe_ms);
    summary_into(f, &format!("{key}_token_ms"), &r.token_ms);
    f.insert(format!("{key}_errors"), r.errors as f64);
    f.insert(format!("{key}_peak_active"), r.peak_active as f64);
    f.insert(format!("{key}_idle_rss_kib"), r.idle_rss_kib as f64);
    f.insert(format!("{key}_peak_rss_kib"), r.peak_rss_kib as f64);
    f.insert(format!("{key}_rss_per_run_kib"), r.rss_per_run_kib);
    f.insert(format!("{key}_cpu_pct"), r.cpu_pct);
    costs_into(f, &key, &r);
    f.insert(format!("{key}_runs_per_s"), r.runs_per_s);
    stack.stop().await
}

/// `n` streams answering at `rate` tokens/s each, started evenly over 3 s (one tool iteration
/// at 50 ms first), each streaming for 8 s: token → SSE over the window when all `n` stream
/// at once (no start stampede), and the server's CPU. The same at 50 tokens/s straight from
/// the mock to the client ("floor"): what the harness itself costs on these cores.
pub(super) async fn streams(ctx: &mut Ctx, f: &mut Figures, rate: u32) -> anyhow::Result<()> {
    let n = if ctx.quick { 100 } else { 1000 };
    let flags = MockFlags {
        latency_ms: 50,
        tokens_per_s: f64::from(rate),
        answer_tokens: 8 * rate as usize,
        tool_iterations: 1,
        stamp_tokens: true,
        ..MockFlags::default()
    };
    let stack = Stack::start(&ctx.http, &flags, &[]).await?;
    let load = Load {
        conversations: n,
        concurrency: n,
        mode: "native".into(),
        ramp: Duration::from_secs(3),
        ..Load::default()
    };
    let r = load::run(&ctx.http, &stack.server.base, Some(stack.server.pid), &load).await;
    ctx.keep(
        &format!("{n} streams at {rate} tokens/s each (started over 3 s, 8 s of answer)"),
        &r,
    );
    let key = format!("streams_{rate}");
    // Past what the cores can carry, starts lag so far behind the ramp that the first
    // streams end before the last begin: then the figure is over every token, and flagged.
    let saturated = r.plateau_s <= 0.0;
    if saturated {
        println!("  (saturated: the {n} streams never all overlapped; every token counted)");
    }
    let tokens = if saturated {
        &r.token_ms
    } else {
        &r.plateau_token_ms
    };
    summary_into(f, &format!("{key}_token_ms"), tokens);
    f.insert(format!("{key}_saturated"), f64::from(u8::from(saturated)));
    f.insert(format!("{key}_plateau_s"), r.plateau_s);
    f.insert(format!("{key}_cpu_pct"), r.cpu_pct);
    costs_into(f, &key, &r);
    // Over the same window as the token figure.
    let busy = if saturated {
        r.machine_busy_pct
    } else {
        r.plateau_machine_busy_pct
    };
    f.insert(format!("{key}_machine_busy_pct"), busy);
    f.insert(format!("{key}_errors"), r.errors as f64);
    stack.stop().await?;
    if rate == 20 {
        relay(ctx, f, n, &flags).await?;
    }
    if rate == 50 {
        let shape = crate::floor::Shape {
            streams: n,
            latency_ms: 200,
            tokens_per_s: 50.0,
            answer_tokens: 100,
            ramp: Duration::ZERO,
        };
        let (s, errors) = crate::floor::measure(&ctx.http, shape).await?;
        println!(
            "== floor: {n} streams at 50 tokens/s straight from the mock: p50 {:.3} p99 {:.3} ms, errors {errors}",
            s.p50, s.p99
        );
        if errors > 0 {
            ctx.errors.push(format!("floor: {errors} streams failed"));
        }
        summary_into(f, "floor_token_ms", &s);
    }
    Ok(())
}

/// The minimal relay on the same load as `streams` at 20 tokens/s: its CPU per token.
async fn relay(ctx: &mut Ctx, f: &mut Figures, n: usize, flags: &MockFlags) -> anyhow::Result<()> {
    let shape = crate::floor::Shape {
        streams: n,
        latency_ms: flags.latency_ms,
        tokens_per_s: flags.tokens_per_s,
        answer_tokens: flags.answer_tokens,
        ramp: Duration::from_secs(3),
    };
    let leg = crate::floor::relay_leg(&ctx.http, &shape).await?;
    println!(
        "== minimal relay, same load: {} per token ({} tokens, {} errors, machine {:.0} % busy)",
        crate::cost::show_us(leg.us_per_token()),
        leg.tokens,
        leg.errors,
        leg.machine_busy_pct
    );
    if leg.errors > 0 {
        ctx.errors
            .push(format!("relay: {} streams failed", leg.errors));
    }
    if let Some(us) = leg.us_per_token() {
        f.insert("relay_20_cpu_us_per_token".into(), us);
    }
    f.insert("relay_20_machine_busy_pct".into(), leg.machine_busy_pct);
    summary_into(f, "relay_20_token_ms", &leg.token_ms);
    Ok(())
}

/// Short runs back to back: 1 iteration, 20-token answer, zero LLM latency. Then start-up on
/// the database this left behind.
pub(super) async fn throughput(ctx: &mut Ctx, f: &mut Figures) -> anyhow::Result<()> {
    let flags = MockFlags {
        tool_iterations: 1,
        answer_tokens: 20,
        ..MockFlags::default()
    };
    let stack = Stack::start(&ctx.http, &flags, &[]).await?;
    let load = Load {
        conversations: if ctx.quick { 300 } else { 3000 },
        concurrency: 64,
        mode: "native".into(),
        ..Load::default()
    };
    let r = load::run(&ctx.http, &stack.server.base, Some(stack.server.pid), &load).await;
    ctx.keep(
        "short runs (1 iteration, 20 tokens, 0 ms), 64 in flight",
        &r,
    );
    f.insert("throughput_runs_per_s".into(), r.runs_per_s);
    f.insert("throughput_cpu_pct".into(), r.cpu_pct);
    costs_into(f, "throughput", &r);
    summary_into(f, "throughput_run_ms", &r.run_ms);
    let Stack { mock, spec, server } = stack;
    server.stop(Duration::from_secs(20)).await?;
    let (mut ready, mut idle) = (vec![], vec![]);
    for _ in 0..3 {
        let s = spec.start(&ctx.http).await?;
        ready.push(s.ready_after.as_secs_f64() * 1e3);
        tokio::time::sleep(Duration::from_secs(1)).await;
        idle.push(memory_kib(s.pid).map(|m| m.0).unwrap_or(0) as f64);
        s.stop(Duration::from_secs(20)).await?;
    }
    let db_mib = std::fs::metadata(spec.db_path())
        .map(|m| m.len())
        .unwrap_or(0) as f64
        / 1048576.0;
    println!(
        "== start-up on the existing database ({} runs, {db_mib:.1} MiB): to /readyz 200 {:?} ms; idle RSS {:?} KiB",
        r.runs, ready, idle
    );
    f.insert("startup_ready_ms".into(), median(&ready));
    f.insert("startup_idle_rss_kib".into(), median(&idle));
    drop(mock);
    Ok(())
}
