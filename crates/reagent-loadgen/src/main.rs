//! `reagent-loadgen`: drives reagent through its public HTTP/SSE API only, from a separate
//! process, verifies every stream and reports latency percentiles, throughput, errors and the
//! server's CPU and memory.
//!
//! - `run`: one load (N conversations at concurrency C) against `--url` or a `--spawn`ed stack
//!   (`reagent mock-provider` + `reagent serve` next to this executable, fresh SQLite database).
//! - `suite [--quick] [--repeat R]`: every target scenario of the performance issue, medians of
//!   R repeats, a Markdown table on stdout and a JSON file for `scripts/plot_benchmarks.py`.
//! - `smoke`: seconds of mixed load with interrupts and cancels, then the process and database
//!   checks; fails only on a broken stream or an inconsistency, never on slowness (CI).
//! - `run --urls A,B,C` / `run --spawn-instances N [--chaos-kill-every S]`: the same load over
//!   several instances on one PostgreSQL database (docs/deployment.md), each request to a random one, a
//!   broken stream resumed elsewhere with `Last-Event-ID` and checked with the takeover rule.
//! - `chaos-smoke`: its bounded CI form (3 instances, kill -9 every 5 s); `instances`: the
//!   several-instances figures of BENCHMARKS.md.
//! - `soak --minutes N`: mixed load with injected provider errors, interrupts and cancels, then
//!   RSS stability, `/metrics` back to idle and a read-only check of the database.
//! - `floor`: streams read straight from a spawned mock, without reagent: the harness's own
//!   token latency on this machine; `floor --relay`: the same load through the server and through
//!   a minimal relay (`relay`, a child process), with both CPU costs per token and their ratio.
//!
//! - `facade [--runs N] [--tokens T] [--tools K] [--apis mcp,…]`: the same short run through
//!   `/api/chat`, `/v1/chat/completions`, `/v1/responses`, `/ag-ui/reagent`, `/ai-sdk/reagent`,
//!   A2A at `/a2a/reagent` and `/mcp` (or those `--apis` names), side by side: each facade's own
//!   cost per run, per token and per streamed step.
//! - `responses`: background responses dropped mid-stream and resumed by `starting_after`.
//! - `tracing` / `budgets`: tracing off, on with the collector down and on with it up; budgets
//!   off and on: the server's CPU per run and per token and runs/s in alternating blocks.
//! - `agents`: a configured agent and one made through `/api/agents` with the same settings, on
//!   one server in alternating blocks: each one's runs/s and CPU per run, and their ratio.
//! - `memory`: where a held run's bytes are (RSS deltas as its parts are added one by one).
//!
//! Exit status 1 when any stream or check failed (every violation printed with its run id).

mod agentcost;
mod args;
mod chaos;
mod check;
mod conv;
mod cost;
mod event;
mod facade;
mod fleet;
mod floor;
mod instances;
mod load;
mod memprobe;
mod multi;
mod otlp_sink;
mod pgdb;
mod plan;
mod procinfo;
mod relay;
mod responses;
mod side;
mod soak;
mod spawn;
mod stats;
mod suite;
mod table;
mod takeover;
mod targets;
mod variants;
mod verify;
mod verify_dag;
mod waiting;

use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};

use crate::args::{FacadeArgs, FloorArgs, RunArgs, SoakArgs, SuiteArgs};
use crate::load::Load;
use crate::spawn::MockFlags;

/// The same allocator as the server (`src/main.rs`): the client shares the server's two cores,
/// and glibc's malloc was ~10 % of its samples while reading 1000 streams.
#[cfg(all(feature = "jemalloc", not(target_env = "msvc")))]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[derive(Parser)]
#[command(
    name = "reagent-loadgen",
    about = "Load generator and stream verifier for reagent"
)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
    /// Spawned servers get `LLM_HTTP2=true` (h2c to the mock, one shared connection) and the
    /// relay's upstream client speaks h2c too: for the HTTP/2 figures in BENCHMARKS.md.
    #[arg(long, global = true)]
    llm_http2: bool,
}

#[derive(Subcommand)]
enum Cmd {
    /// One load against a running server (--url) or a spawned one (--spawn).
    Run(Box<RunArgs>),
    /// Every benchmark scenario; prints the results table and writes a JSON file.
    Suite(SuiteArgs),
    /// A few seconds of mixed load with interrupts and cancels; fails on a broken stream.
    Smoke,
    /// CI chaos over 3 instances on a fresh PostgreSQL database (docs/deployment.md): kill -9 every 5 s;
    /// fails on a broken stream, a lost accepted interrupt or an inconsistent database.
    ChaosSmoke,
    /// The several-instances figures: event latency on a non-owner, kill -9 → progress again,
    /// short-run throughput with 1 and 3 instances (BENCHMARKS.md).
    Instances(instances::InstancesArgs),
    /// N minutes of mixed load with faults, then process and database consistency checks.
    Soak(SoakArgs),
    /// The harness's own token latency: N streams straight from the mock, no reagent.
    Floor(FloorArgs),
    /// The same short run through /api/chat, /v1/chat/completions, /v1/responses, /ag-ui,
    /// The same short run through /api/chat, /v1/chat/completions, /v1/responses, /ag-ui,
    /// /ai-sdk, /a2a and /mcp: the facades' own cost.
    Facade(FacadeArgs),
    /// Background responses dropped mid-stream and resumed by `starting_after`, under load.
    Responses(responses::ResponsesArgs),
    /// Tracing off, on with the collector down, on with a collector up: the server's CPU per
    /// streamed token in alternating blocks.
    Tracing(variants::VariantArgs),
    /// Budgets off and on (a budget that never refuses): short-run throughput and CPU per run
    /// in alternating blocks.
    Budgets(variants::VariantArgs),
    /// The same short runs of a configured agent and of one made through /api/agents with the
    /// same settings, on one server in alternating blocks: runs/s and CPU per run of each.
    Agents(variants::VariantArgs),
    /// Where a held run's bytes are: RSS deltas as the parts of N runs are added one by one.
    Memory {
        #[arg(long, short = 'n', default_value_t = 1000)]
        runs: usize,
        /// How long each run's first LLM call is held while the parts are added.
        #[arg(long, default_value_t = 30.0)]
        hold_s: f64,
        /// After reading step 2, 3 or 4: print `memory: paused at step N (server pid P)` and
        /// hold the server in that state for `--pause-s`, for a heap snapshot taken from
        /// outside (scripts/heap_by_part.sh).
        #[arg(long, value_parser = clap::value_parser!(u8).range(2..=4))]
        pause_at: Option<u8>,
        #[arg(long, default_value_t = 20.0)]
        pause_s: f64,
    },
    /// What N runs waiting for their caller's tool outputs hold: tokio tasks and RSS (no task, < 5 KB each).
    Waiting {
        #[arg(long, short = 'n', default_value_t = 100)]
        runs: usize,
        /// Rounds of N runs paused and answered before the readings.
        #[arg(long, default_value_t = 3)]
        warmup: usize,
    },
    /// The minimal relay process that `floor --relay` spawns (not for direct use).
    #[command(hide = true)]
    Relay {
        #[arg(long)]
        upstream: String,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    spawn::set_llm_http2(cli.llm_http2);
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("reagent-loadgen: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(dispatch(cli.command)) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("reagent-loadgen: FAILED (see the errors above)");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("reagent-loadgen: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// A client for thousands of concurrent streams on loopback.
pub fn http_client() -> anyhow::Result<reqwest::Client> {
    Ok(reqwest::Client::builder()
        .pool_max_idle_per_host(4096)
        .tcp_nodelay(true)
        .build()?)
}

/// Ok(false) when a check failed.
async fn dispatch(cmd: Cmd) -> anyhow::Result<bool> {
    let fds = procinfo::raise_fd_limit();
    if fds < 4096 {
        eprintln!("warning: open-file limit is {fds}; thousands of streams need more (ulimit -n)");
    }
    match cmd {
        Cmd::Run(a) => run(*a).await,
        Cmd::Suite(a) => {
            let out = a.out.unwrap_or_else(|| suite::default_out(&a.only));
            suite::suite(a.quick, a.repeat.max(1), a.only, &out).await
        }
        Cmd::Smoke => soak::smoke().await,
        Cmd::ChaosSmoke => chaos::chaos_smoke().await,
        Cmd::Instances(a) => instances::instances(a).await,
        Cmd::Soak(a) => soak::soak(a.minutes, a.concurrency, a.error_rate).await,
        Cmd::Facade(a) => {
            let plan = facade::Plan {
                runs: a.runs,
                warmup: a.warmup,
                tokens: a.tokens,
                tools: a.tools,
                apis: a.apis,
            };
            facade::facade(&http_client()?, plan).await
        }
        Cmd::Responses(a) => responses::responses(&http_client()?, a).await,
        Cmd::Tracing(a) => variants::tracing(&http_client()?, a).await,
        Cmd::Budgets(a) => variants::budgets(&http_client()?, a).await,
        Cmd::Agents(a) => agentcost::agents(&http_client()?, a).await,
        Cmd::Floor(a) => {
            let http = http_client()?;
            let shape = floor::Shape {
                streams: a.streams,
                latency_ms: a.latency_ms,
                tokens_per_s: a.tokens_per_s,
                answer_tokens: a.answer_tokens,
                ramp: Duration::from_secs_f64(a.ramp_s.max(0.0)),
            };
            if a.relay {
                floor::relay_vs_server(&http, shape, a.iterations).await
            } else {
                floor::floor(&http, shape).await
            }
        }
        Cmd::Memory {
            runs,
            hold_s,
            pause_at,
            pause_s,
        } => {
            let http = http_client()?;
            let pause = pause_at.map(|step| memprobe::Pause {
                step,
                hold: Duration::from_secs_f64(pause_s.max(0.0)),
            });
            let hold = Duration::from_secs_f64(hold_s.max(1.0));
            memprobe::probe(&http, runs, hold, pause).await
        }
        Cmd::Waiting { runs, warmup } => waiting::waiting(runs, warmup).await,
        Cmd::Relay { upstream } => relay::serve(upstream).await,
    }
}

async fn run(a: RunArgs) -> anyhow::Result<bool> {
    let http = http_client()?;
    let load = Load {
        conversations: a.conversations,
        concurrency: a.concurrency.unwrap_or(a.conversations),
        mode: a.mode.clone(),
        engine: a.engine.clone(),
        agent: a.agent.clone(),
        interrupt_rate: a.interrupt_rate,
        cancel_rate: a.cancel_rate,
        also_ok: if a.error_rate > 0.0 {
            vec!["failed"]
        } else {
            vec![]
        },
        seed: a.seed,
        timeout: Duration::from_secs(600),
        ramp: Duration::from_secs_f64(a.ramp_s.max(0.0)),
        targets: None,
    };
    let flags = MockFlags {
        latency_ms: a.latency_ms,
        tokens_per_s: a.tokens_per_s,
        answer_tokens: a.answer_tokens,
        tool_iterations: a.iterations,
        error_rate: a.error_rate,
        seed: a.seed,
        stamp_tokens: true,
        first_call_latency_ms: None,
    };
    let report = if let Some(n) = a.spawn_instances {
        let chaos = a
            .chaos_kill_every
            .map(|s| Duration::from_secs_f64(s.max(0.5)));
        let leases = fleet::Leases {
            ttl_s: a.lease_ttl_s.or(chaos.map(|_| 3)),
            renew_s: a.lease_renew_s.or(chaos.map(|_| 1)),
        };
        return instances::run_spawned(&http, n, a.database_url, &flags, leases, &load, chaos)
            .await;
    } else if !a.urls.is_empty() {
        let targets = std::sync::Arc::new(targets::Targets::new(a.urls));
        let base = targets.urls[0].clone();
        let load = Load {
            targets: Some(targets),
            ..load.clone()
        };
        load::run(&http, &base, a.server_pid, &load).await
    } else if let Some(url) = a.url {
        load::run(&http, url.trim_end_matches('/'), a.server_pid, &load).await
    } else if a.spawn {
        let stack = spawn::Stack::start(&http, &flags, &[]).await?;
        let report = load::run(&http, &stack.server.base, Some(stack.server.pid), &load).await;
        stack.stop().await?;
        report
    } else {
        anyhow::bail!("give --spawn, --url, --urls or --spawn-instances");
    };
    report.print(&format!(
        "{} conversations, concurrency {}, mode {}",
        load.conversations, load.concurrency, load.mode
    ));
    Ok(report.errors == 0)
}
