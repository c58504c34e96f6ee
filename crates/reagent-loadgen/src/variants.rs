//! `tracing` and `budgets`: what an optional feature costs the server, as ratios within one run.
//! One mock and one server per variant (each spawned with that variant's settings on its own
//! fresh SQLite database); the same load goes to each in turn, in blocks alternated A B C C B A
//! … so that drift on a shared machine hits all alike. Per variant and block: the server's CPU
//! per run and per streamed answer token, and runs per second (every stream verified as in
//! `run`); the figures are medians over blocks.
//!
//! - `tracing`: off; on with the collector down (an endpoint where nothing listens); on with a
//!   collector up (`otlp_sink.rs`, in this process, which counts what it receives).
//! - `budgets`: off; on with a `"*"` day budget far above what the load spends (every call
//!   reserves and settles, none is refused).

use std::time::Duration;

use anyhow::Context;

use crate::load::{self, Load};
use crate::pgdb::{PgDb, PG_ADMIN_URL};
use crate::spawn::{free_port, Mock, MockFlags, Server, ServerSpec, TempDir, SCRIPTED};
use crate::stats::Summary;

/// One way to run the server.
pub struct Variant {
    pub name: &'static str,
    pub env: Vec<(&'static str, String)>,
}

/// The load of one block, and how many.
#[derive(clap::Args)]
pub struct VariantArgs {
    /// Runs per block (each variant gets one block per round).
    #[arg(long, short = 'n', default_value_t = 300)]
    pub runs: usize,
    /// Runs in flight at once.
    #[arg(long, short = 'c', default_value_t = 64)]
    pub concurrency: usize,
    /// Rounds (blocks per variant, order reversed every other round).
    #[arg(long, default_value_t = 6)]
    pub blocks: usize,
    /// Tokens of each run's answer.
    #[arg(long, default_value_t = 20)]
    pub tokens: usize,
    /// `budgets` and `agents` only: the servers on fresh PostgreSQL databases (at the admin URL
    /// of `instances`) instead of SQLite.
    #[arg(long)]
    pub pg: bool,
}

/// What one block measured on one variant.
#[derive(Clone, Copy, Default)]
pub struct Sample {
    pub runs_per_s: f64,
    pub cpu_us_per_run: f64,
    pub cpu_us_per_token: f64,
    /// Busy share of all the machine's cores during the block, percent.
    pub machine_busy_pct: f64,
}

impl Sample {
    /// The block's figures from its load report; `tokens` per answer.
    pub fn of(r: &load::LoadReport, tokens: usize) -> Sample {
        Sample {
            runs_per_s: r.runs_per_s,
            cpu_us_per_run: r.cpu_us_per_run.unwrap_or(f64::NAN),
            // The run's start and tool call included, as `facade` counts a token.
            cpu_us_per_token: r.cpu_us_per_run.unwrap_or(f64::NAN) / tokens.max(1) as f64,
            machine_busy_pct: r.machine_busy_pct,
        }
    }
}

/// The processes of a comparison, left running for the caller's checks.
pub struct Running {
    _mock: Mock,
    servers: Vec<(ServerSpec, Server)>,
}

impl Running {
    fn base(&self, i: usize) -> &str {
        &self.servers[i].1.base
    }

    /// SIGTERM to every server (tracing flushes its last batch), then their directories go.
    async fn stop(self) -> anyhow::Result<()> {
        for (spec, server) in self.servers {
            server.stop(Duration::from_secs(20)).await?;
            drop(spec);
        }
        Ok(())
    }
}

/// Runs the blocks; prints a table of medians with each variant against the first.
pub async fn compare(
    http: &reqwest::Client,
    title: &str,
    flags: &MockFlags,
    variants: &[Variant],
    block: &VariantArgs,
) -> anyhow::Result<Running> {
    let mock = Mock::start(flags).await?;
    let (mut specs, mut servers) = (Vec::new(), Vec::new());
    for v in variants {
        let mut env: Vec<(&str, String)> =
            SCRIPTED.iter().map(|(k, v)| (*k, v.to_string())).collect();
        env.extend(v.env.iter().cloned());
        let spec = ServerSpec::new(&mock.base_url, &env)?;
        let server = spec.start(http).await.with_context(|| v.name)?;
        servers.push(server);
        specs.push(spec);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let load = |n: usize| Load {
        conversations: n,
        concurrency: block.concurrency.max(1),
        mode: "native".into(),
        ..Load::default()
    };
    // Warm-up: connections, statement caches, the allocators.
    for s in &servers {
        let r = load::run(
            http,
            &s.base,
            Some(s.pid),
            &load(block.concurrency.max(1) * 4),
        )
        .await;
        anyhow::ensure!(r.errors == 0, "warm-up failed: {:?}", r.error_samples);
    }
    let mut samples: Vec<Vec<Sample>> = variants.iter().map(|_| Vec::new()).collect();
    for b in 0..block.blocks.max(1) {
        let mut order: Vec<usize> = (0..variants.len()).collect();
        if b % 2 == 1 {
            order.reverse();
        }
        for i in order {
            let s = &servers[i];
            let r = load::run(http, &s.base, Some(s.pid), &load(block.runs)).await;
            anyhow::ensure!(
                r.errors == 0,
                "{}: {} errors, e.g. {:?}",
                variants[i].name,
                r.errors,
                r.error_samples
            );
            samples[i].push(Sample::of(&r, flags.answer_tokens));
        }
    }
    print_table(title, flags, variants, block, &samples);
    Ok(Running {
        _mock: mock,
        servers: specs.into_iter().zip(servers).collect(),
    })
}

pub fn median_of(samples: &[Sample], f: impl Fn(&Sample) -> f64) -> f64 {
    Summary::of(&samples.iter().map(f).collect::<Vec<_>>()).p50
}

pub fn print_table(
    title: &str,
    flags: &MockFlags,
    variants: &[Variant],
    block: &VariantArgs,
    samples: &[Vec<Sample>],
) {
    println!(
        "== {title}: {} blocks of {} runs per variant, {} in flight (1 tool call, {}-token answer, mock at 0 ms); medians",
        block.blocks, block.runs, block.concurrency, flags.answer_tokens
    );
    let base = &samples[0];
    let (b_rps, b_run, b_tok) = (
        median_of(base, |s| s.runs_per_s),
        median_of(base, |s| s.cpu_us_per_run),
        median_of(base, |s| s.cpu_us_per_token),
    );
    for (v, s) in variants.iter().zip(samples) {
        let (rps, run, tok) = (
            median_of(s, |s| s.runs_per_s),
            median_of(s, |s| s.cpu_us_per_run),
            median_of(s, |s| s.cpu_us_per_token),
        );
        let blocks: Vec<String> = s
            .iter()
            .map(|x| format!("{:.1}", x.cpu_us_per_token))
            .collect();
        let busy = median_of(s, |s| s.machine_busy_pct);
        println!(
            "  {:<22} {rps:8.1} runs/s ({:+5.1} %)   server CPU {run:8.1} µs/run ({:+5.1} %), {tok:6.2} µs/token ({:+5.1} %)   machine {busy:3.0} % busy   per block µs/token [{}]",
            v.name,
            pct(rps, b_rps),
            pct(run, b_run),
            pct(tok, b_tok),
            blocks.join(", ")
        );
    }
}

pub fn pct(x: f64, base: f64) -> f64 {
    100.0 * (x - base) / base.max(1e-9)
}

/// `budgets`: the short-run load with budgets off and on.
pub async fn budgets(http: &reqwest::Client, block: VariantArgs) -> anyhow::Result<bool> {
    let dir = TempDir::new()?;
    let config = dir.path().join("budgets.toml");
    // Far above what any run here spends: the reservation is made and settled, never refused.
    std::fs::write(
        &config,
        "[[budgets]]\ntenant = \"*\"\nwindow = \"day\"\ntokens = 1000000000000000\n",
    )?;
    let mut dbs = Vec::new();
    if block.pg {
        for _ in 0..2 {
            dbs.push(PgDb::create(PG_ADMIN_URL).await?);
        }
    }
    let db_env = |i: usize| dbs.get(i).map(|d| ("DATABASE_URL", d.url.clone()));
    let variants = [
        Variant {
            name: "budgets off",
            env: db_env(0).into_iter().collect(),
        },
        Variant {
            name: "budgets on (day, \"*\")",
            env: [("REAGENT_CONFIG", config.display().to_string())]
                .into_iter()
                .chain(db_env(1))
                .collect(),
        },
    ];
    let flags = MockFlags {
        tool_iterations: 1,
        answer_tokens: block.tokens,
        ..MockFlags::default()
    };
    let title = if block.pg {
        "budgets (PostgreSQL)"
    } else {
        "budgets (SQLite)"
    };
    let running = compare(http, title, &flags, &variants, &block).await?;
    // Proof that the second server reserved: its budget window has spend.
    let usage: serde_json::Value = http
        .get(format!("{}/api/usage", running.base(1)))
        .send()
        .await?
        .json()
        .await?;
    println!("  budgets on, GET /api/usage budgets: {}", usage["budgets"]);
    running.stop().await?;
    for db in dbs {
        db.drop().await?;
    }
    Ok(true)
}

/// `tracing`: tracing off, on with the collector down, on with a collector up.
pub async fn tracing(http: &reqwest::Client, block: VariantArgs) -> anyhow::Result<bool> {
    anyhow::ensure!(!block.pg, "--pg is an option of `budgets` only");
    let sink = crate::otlp_sink::Sink::start().await?;
    let nowhere = free_port()?;
    let variants = [
        Variant {
            name: "tracing off",
            env: vec![],
        },
        Variant {
            name: "on, collector down",
            env: vec![(
                "OTEL_EXPORTER_OTLP_ENDPOINT",
                format!("http://127.0.0.1:{nowhere}"),
            )],
        },
        Variant {
            name: "on, collector up",
            env: vec![("OTEL_EXPORTER_OTLP_ENDPOINT", sink.url())],
        },
    ];
    let flags = MockFlags {
        tool_iterations: 1,
        answer_tokens: block.tokens,
        ..MockFlags::default()
    };
    let running = compare(http, "tracing", &flags, &variants, &block).await?;
    // Stopping flushes the last batch.
    running.stop().await?;
    let (requests, spans) = sink.received();
    println!("  collector received {spans} spans in {requests} export requests");
    Ok(spans > 0)
}
