//! The several-instances figures of BENCHMARKS.md (docs/deployment.md), each on spawned instances over a
//! fresh PostgreSQL database: event latency to a subscriber on a non-owner instance (the mock
//! stamps each token; every run is started on one instance and streamed from another), the
//! time from kill -9 of a run's owner to its `step resumed` reaching a client on a survivor,
//! and short-run throughput with 1 and 3 instances side by side. Also `run --spawn-instances`.

use std::time::{Duration, Instant};

use clap::Args;
use serde_json::{json, Value};

use crate::chaos::{load_with_chaos, print_kills};
use crate::event::Ev;
use crate::fleet::{Fleet, Leases};
use crate::load::Load;
use crate::multi::Conn;
use crate::pgdb::{PgDb, PG_ADMIN_URL};
use crate::plan::ConvResult;
use crate::spawn::MockFlags;
use crate::stats::Summary;

#[derive(Args)]
pub struct InstancesArgs {
    /// Only one measure: latency, takeover or throughput.
    #[arg(long)]
    only: Option<String>,
    /// Lease TTL for the takeover measure (renewal every TTL/5, at least 1 s).
    #[arg(long, default_value_t = 5)]
    lease_ttl_s: u64,
    /// Conversations of the latency and throughput measures.
    #[arg(long, short = 'n', default_value_t = 300)]
    conversations: usize,
    #[arg(long, short = 'c', default_value_t = 30)]
    concurrency: usize,
    /// Admin URL fresh databases are created on.
    #[arg(long, default_value = PG_ADMIN_URL)]
    pg_admin_url: String,
}

/// `run --spawn-instances N`: the load (with chaos when asked) on `db_url` or a fresh database.
pub async fn run_spawned(
    http: &reqwest::Client,
    n: usize,
    db_url: Option<String>,
    flags: &MockFlags,
    leases: Leases,
    load: &Load,
    chaos: Option<Duration>,
) -> anyhow::Result<bool> {
    let fresh = match db_url {
        Some(_) => None,
        None => Some(PgDb::create(PG_ADMIN_URL).await?),
    };
    let url = db_url.unwrap_or_else(|| fresh.as_ref().map(|d| d.url.clone()).unwrap_or_default());
    let result = async {
        let fleet = Fleet::start(http, n, &url, flags, leases, &[]).await?;
        load_with_chaos(http, fleet, &url, load, chaos).await
    }
    .await;
    if let Some(db) = fresh {
        db.drop().await?;
    }
    let (report, kills, errs) = result?;
    report.print(&format!(
        "{} conversations over {n} instances, concurrency {}, mode {}{}",
        load.conversations,
        load.concurrency,
        load.mode,
        chaos.map_or(String::new(), |c| format!(
            ", kill -9 every {:.1} s",
            c.as_secs_f64()
        ))
    ));
    print_kills(&kills);
    for e in &errs {
        println!("ERROR {e}");
    }
    Ok(errs.is_empty())
}

pub async fn instances(a: InstancesArgs) -> anyhow::Result<bool> {
    let http = crate::http_client()?;
    let want = |m: &str| a.only.as_deref().is_none_or(|o| o == m);
    let mut ok = true;
    if want("latency") {
        ok &= fresh(&a, |url| latency(&http, url, &a)).await?;
    }
    if want("takeover") {
        ok &= fresh(&a, |url| takeover(&http, url, a.lease_ttl_s)).await?;
    }
    if want("throughput") {
        for n in [1, 3] {
            ok &= fresh(&a, |url| throughput(&http, url, n, &a)).await?;
        }
    }
    Ok(ok)
}

/// Runs `f` on a fresh database, dropped afterwards.
async fn fresh<F, Fut>(a: &InstancesArgs, f: F) -> anyhow::Result<bool>
where
    F: FnOnce(String) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<bool>>,
{
    let db = PgDb::create(&a.pg_admin_url).await?;
    let r = f(db.url.clone()).await;
    db.drop().await?;
    r
}

/// Token → SSE at a client on a non-owner instance: 3 instances, each run started on one and
/// streamed from another (the mock stamps every token when it sends it).
async fn latency(http: &reqwest::Client, url: String, a: &InstancesArgs) -> anyhow::Result<bool> {
    let flags = MockFlags {
        latency_ms: 100,
        tokens_per_s: 20.0,
        answer_tokens: 40,
        tool_iterations: 1,
        stamp_tokens: true,
        ..MockFlags::default()
    };
    let fleet = Fleet::start(http, 3, &url, &flags, Leases::default(), &[]).await?;
    let load = Load {
        conversations: a.conversations.min(a.concurrency * 3),
        concurrency: a.concurrency,
        timeout: Duration::from_secs(120),
        ..Load::default()
    };
    let (r, _, errs) = load_with_chaos(http, fleet, &url, &load, None).await?;
    r.print(
        "latency: runs started on one instance, streamed from another (3 instances, PostgreSQL)",
    );
    println!(
        "  event latency to a non-owner subscriber (token -> SSE): p50 {:.1} ms, p99 {:.1} ms (n={})",
        r.token_ms.p50, r.token_ms.p99, r.token_ms.n
    );
    report_errors(&errs)
}

/// Short runs per second on PostgreSQL with `n` instances (one tool call, 20 tokens, mock at 0 ms).
async fn throughput(
    http: &reqwest::Client,
    url: String,
    n: usize,
    a: &InstancesArgs,
) -> anyhow::Result<bool> {
    let flags = MockFlags {
        tool_iterations: 1,
        answer_tokens: 20,
        ..MockFlags::default()
    };
    let fleet = Fleet::start(http, n, &url, &flags, Leases::default(), &[]).await?;
    let load = Load {
        conversations: a.conversations,
        concurrency: a.concurrency,
        timeout: Duration::from_secs(120),
        ..Load::default()
    };
    let (r, _, errs) = load_with_chaos(http, fleet, &url, &load, None).await?;
    r.print(&format!(
        "throughput: short runs, {n} instance(s), PostgreSQL"
    ));
    println!(
        "  short runs on PostgreSQL, {n} instance(s): {:.1} runs/s (run p50 {:.1} ms, p99 {:.1} ms)",
        r.runs_per_s, r.run_ms.p50, r.run_ms.p99
    );
    report_errors(&errs)
}

fn report_errors(errs: &[String]) -> anyhow::Result<bool> {
    for e in errs {
        println!("ERROR {e}");
    }
    Ok(errs.is_empty())
}

/// Runs held in a long tool loop on instance a, each followed from b or c; a is killed; each
/// run's delay from the kill to its `step resumed` at the client.
async fn takeover(http: &reqwest::Client, url: String, ttl: u64) -> anyhow::Result<bool> {
    let flags = MockFlags {
        latency_ms: 200,
        tool_iterations: 40,
        answer_tokens: 10,
        ..MockFlags::default()
    };
    let renew = (ttl / 5).max(1);
    let leases = Leases {
        ttl_s: Some(ttl),
        renew_s: Some(renew),
    };
    let extra = [("REACT_MAX_ITERATIONS", "100".to_string())];
    let mut fleet = Fleet::start(http, 3, &url, &flags, leases, &extra).await?;
    let t0 = Instant::now();
    let mut readers = Vec::new();
    for k in 0..6 {
        let run = start_on(http, &fleet.url(0)).await?;
        let at = fleet.url(1 + k % 2);
        let http = http.clone();
        readers.push(tokio::spawn(async move {
            follow_to_end(&http, &at, &run, t0).await
        }));
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    fleet.kill9(0).await?;
    let killed_ms = t0.elapsed().as_secs_f64() * 1e3;
    let mut delays = Vec::new();
    let mut errs = Vec::new();
    for r in readers {
        match r.await? {
            Ok(c) => match c.resumed_at_ms.iter().find(|t| **t >= killed_ms) {
                Some(t) => delays.push(t - killed_ms),
                None => errs.push(format!(
                    "run {:?}: no step resumed after the kill",
                    c.run_id
                )),
            },
            Err(e) => errs.push(format!("{e:#}")),
        }
    }
    errs.extend(fleet.stop().await);
    let s = Summary::of(&delays);
    println!(
        "takeover: kill -9 of the owner of 6 runs -> step resumed at a client on a survivor: p50 {:.2} s, max {:.2} s (lease TTL {ttl} s, renewal {} s; target TTL + 2 s)",
        s.p50 / 1e3,
        s.max / 1e3,
        renew
    );
    report_errors(&errs)
}

/// A new conversation and a run in it on `base`; the run id.
async fn start_on(http: &reqwest::Client, base: &str) -> anyhow::Result<String> {
    let conv: Value = http
        .post(format!("{base}/api/conversations"))
        .json(&json!({}))
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    let id = conv["id"].as_str().unwrap_or_default();
    let run: Value = http
        .post(format!("{base}/api/conversations/{id}/runs"))
        .json(&json!({"query": "a long tool loop"}))
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    Ok(run["run_id"].as_str().unwrap_or_default().to_string())
}

/// The run's stream from `base` to `done`, reconnecting there with `Last-Event-ID` if it breaks.
async fn follow_to_end(
    http: &reqwest::Client,
    base: &str,
    run: &str,
    t0: Instant,
) -> anyhow::Result<ConvResult> {
    let mut out = ConvResult {
        run_id: Some(run.to_string()),
        ..ConvResult::default()
    };
    let mut last: Option<String> = None;
    for _ in 0..20 {
        let mut conn = Conn::default();
        let mut ignore = |_: &Ev| {};
        let r = crate::multi::follow(
            http,
            base,
            run,
            last.clone(),
            t0,
            &mut out,
            &mut conn,
            &mut ignore,
        );
        let r = tokio::time::timeout(Duration::from_secs(120), r).await;
        last = conn.events.last().map(|e| e.id.clone()).or(last);
        if matches!(r, Ok(Ok(()))) {
            return Ok(out);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    anyhow::bail!("run {run}: no done from {base}")
}
