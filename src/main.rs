//! The `reagent` command line: a thin layer over the library.
//!
//! - `reagent serve` loads the configuration (`config.toml` or `REAGENT_CONFIG`, then the
//!   environment), binds `REAGENT_BIND` and serves until Ctrl-C or SIGTERM, then shuts down
//!   gracefully within `server.shutdown_grace_s`. `serve --demo` answers every run with the
//!   demo model: the scripted mock provider, in-process on a loopback port, so a first run
//!   needs no key and no network.
//! - `reagent check-config [--demo]` loads and validates the configuration and prints a summary
//!   without secrets; useful in CI and before a deploy.
//! - `reagent mock-provider --bind ADDR [options]` runs the OpenAI-compatible mock provider
//!   ([`MockProvider`]) for load tests; it needs no configuration and prints
//!   `mock provider listening on http://ADDR` on stdout (so `--bind 127.0.0.1:0` works).
//! - `reagent eval TASKS.jsonl [--url URL | --config FILE] [options]` runs an agent over a task
//!   file and reports its accuracy ([`reagent::eval`], evals/README.md).
//! - `reagent mcp --url URL [--key-env NAME]` serves the agents of a running reagent as an MCP
//!   server over stdio, for clients that launch MCP servers as processes ([`reagent::mcp_stdio`]);
//!   stdout carries the protocol, logs go to stderr.
//!
//! `serve` loads the configuration, binds (before anything is created, so a port in use leaves
//! no database file behind), assembles the service with [`App::build`] and hands over to
//! [`App::run_until_stopped`] with the OS signals as the shutdown signal; everything
//! about the service itself lives in [`reagent::app`].
//!
//! An invalid configuration prints `reagent: configuration error: <message naming the key>` and
//! exits with status 2. Logs go to stderr (filter with `RUST_LOG`, default `info`).

use std::collections::HashMap;
use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use reagent::app::{setup, App, AppOverrides};
use reagent::config::{Config, ConfigError, DEFAULT_CONFIG_FILE, DEMO_NOTICE};
use reagent::eval::{EvalArgs, EvalError};
use reagent::mcp_stdio::McpArgs;
use reagent::server;
use reagent_mock::{MockConfig, MockProvider, DEFAULT_TOOL_ARGS};
use tracing_subscriber::EnvFilter;

/// jemalloc, not the system allocator: a streamed token costs the server a handful of small
/// allocations, freed on whichever worker thread gets there, which glibc's malloc handles
/// slowly; jemalloc took a large share off the server's CPU at equal memory per run, mimalloc
/// held more memory per run (BENCHMARKS.md). Its background thread returns freed pages to the
/// system on an idle server too.
#[cfg(all(feature = "jemalloc", not(target_env = "msvc")))]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// Exit status for configuration errors (distinct from runtime failures, status 1).
const EXIT_CONFIG: u8 = 2;

#[derive(Parser)]
#[command(
    name = "reagent",
    version,
    about = "Runs ReAct tool-using LLM agents over HTTP and SSE"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Start the HTTP server on REAGENT_BIND.
    Serve(ServeArgs),
    /// Validate the configuration and print a summary (no secrets).
    CheckConfig(ServeArgs),
    /// Run an OpenAI-compatible mock provider for load tests (no configuration needed).
    MockProvider(MockArgs),
    /// Run an agent over a JSONL file of tasks and report its accuracy (evals/README.md).
    Eval(EvalArgs),
    /// Serve a running reagent's agents as an MCP server over stdio (for Claude Desktop-style
    /// clients that launch MCP servers as processes).
    Mcp(McpArgs),
}

/// The flags of `serve` and `check-config`.
#[derive(Args)]
struct ServeArgs {
    /// Answer every run with the demo model: scripted answers from a mock provider inside the
    /// process (calculator and clock questions work), no API key and no network needed.
    #[arg(long)]
    demo: bool,
}

/// The flags of `mock-provider`; see [`MockConfig`] for their meaning.
#[derive(Args)]
struct MockArgs {
    /// Address to listen on (port 0 picks a free port).
    #[arg(long, default_value = "127.0.0.1:9090")]
    bind: std::net::SocketAddr,
    /// Delay before the first byte of each reply, in milliseconds.
    #[arg(long, default_value_t = 0)]
    latency_ms: u64,
    /// Replaces --latency-ms for a loop call that holds no tool result yet (a run's first).
    #[arg(long)]
    first_call_latency_ms: Option<u64>,
    /// Streamed tokens per second (0 = as fast as possible).
    #[arg(long, default_value_t = 0.0)]
    tokens_per_s: f64,
    /// Words in the answer.
    #[arg(long, default_value_t = 16)]
    answer_tokens: usize,
    /// Tool calls before the final answer.
    #[arg(long, default_value_t = 0)]
    tool_iterations: usize,
    /// Tool the script calls.
    #[arg(long, default_value = "calculator")]
    tool: String,
    /// Arguments JSON of the scripted call; `<i>` is replaced by the iteration index.
    #[arg(long, default_value = DEFAULT_TOOL_ARGS)]
    tool_args: String,
    /// Share of requests answered 503 (0..1).
    #[arg(long, default_value_t = 0.0)]
    error_rate: f64,
    /// Seed of the error-rate draws (same seed, same sequence).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Append each streamed word's send time (`~<µs since the UNIX epoch>`), for latency
    /// measurements on the same host.
    #[arg(long)]
    stamp_tokens: bool,
}

impl From<MockArgs> for MockConfig {
    fn from(a: MockArgs) -> Self {
        MockConfig {
            bind: a.bind,
            latency: Duration::from_millis(a.latency_ms),
            first_call_latency: a.first_call_latency_ms.map(Duration::from_millis),
            tokens_per_s: a.tokens_per_s,
            answer_tokens: a.answer_tokens,
            tool_iterations: a.tool_iterations,
            tool: a.tool,
            tool_args: a.tool_args,
            error_rate: a.error_rate,
            seed: a.seed,
            stamp_tokens: a.stamp_tokens,
            demo: false,
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let (serve_it, args) = match cli.command {
        // The mock provider is not the service: it must start without (or despite) its config.
        Command::MockProvider(args) => return exit_code(run_mock(args.into())),
        // The eval loads its own configuration (--config), or none with --url.
        Command::Eval(args) => return run_eval(args),
        // A relay to a running service: it needs no configuration of its own.
        Command::Mcp(args) => return exit_code(run_mcp(args)),
        Command::Serve(args) => (true, args),
        Command::CheckConfig(args) => (false, args),
    };
    let env: HashMap<String, String> = std::env::vars().collect();
    let config = match load_config(&env) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("reagent: configuration error: {e}");
            return ExitCode::from(EXIT_CONFIG);
        }
    };
    if serve_it {
        exit_code(run_server(config, args.demo, env))
    } else {
        check_config(config, args.demo, &env);
        ExitCode::SUCCESS
    }
}

/// The configuration, and the checks start-up makes against the tools it builds.
fn load_config(env: &HashMap<String, String>) -> Result<Config, ConfigError> {
    let config = Config::load_with(env, Path::new(DEFAULT_CONFIG_FILE))?;
    setup::check(&config)?;
    Ok(config)
}

/// Prints the warnings (stderr) and the summary (stdout) of a valid configuration.
fn check_config(mut config: Config, demo: bool, env: &HashMap<String, String>) {
    for warning in &config.warnings {
        eprintln!("reagent: warning: {warning}");
    }
    if demo {
        let place = "http://127.0.0.1:<port chosen at start-up>/v1";
        for note in config.use_demo_model(place, env) {
            eprintln!("reagent: {note}");
        }
        eprintln!("reagent: {DEMO_NOTICE} (--demo)");
    }
    print!("configuration OK\n{}", config.summary());
}

fn exit_code(result: anyhow::Result<()>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("reagent: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn init_tracing(json: bool) {
    init_tracing_with(reagent::app::DEFAULT_LOG_FILTER, json);
}

fn init_tracing_with(default_filter: &str, json: bool) {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default_filter));
    let fmt = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    // JSON lines for log collectors (`REAGENT_LOG_FORMAT=json`), each with its spans' fields.
    match json {
        true => fmt.json().init(),
        false => fmt.with_ansi(std::io::stderr().is_terminal()).init(),
    }
}

fn run_server(config: Config, demo: bool, env: HashMap<String, String>) -> anyhow::Result<()> {
    init_tracing(config.server.log_json);
    let runtime = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    runtime.block_on(serve(config, demo, env))
}

/// `reagent eval`: status 0, 1 below `--min-accuracy` or when it could not run, 2 for bad
/// flags, task file or configuration.
fn run_eval(args: EvalArgs) -> ExitCode {
    // Warnings only: the in-process service's info lines would bury the progress line.
    init_tracing_with("warn", false);
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(r) => r,
        Err(e) => return exit_code(Err(anyhow::anyhow!("cannot start the async runtime: {e}"))),
    };
    match runtime.block_on(reagent::eval::run(args)) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(EvalError::Usage(e)) => {
            eprintln!("reagent: eval: {e}");
            ExitCode::from(EXIT_CONFIG)
        }
        Err(EvalError::Run(e)) => exit_code(Err(e)),
    }
}

/// `reagent mcp`: logs on stderr only (warnings by default), since stdout is the protocol.
fn run_mcp(args: McpArgs) -> anyhow::Result<()> {
    init_tracing_with("warn", false);
    let runtime = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    runtime.block_on(reagent::mcp_stdio::run(args))
}

fn run_mock(cfg: MockConfig) -> anyhow::Result<()> {
    init_tracing(false);
    let runtime = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    runtime.block_on(async {
        let bind = cfg.bind;
        let provider = MockProvider::start(cfg)
            .await
            .with_context(|| format!("cannot start the mock provider on {bind}"))?;
        let stop = shutdown_signal();
        // Scripts and tests read this line (stdout) to find the port when binding port 0.
        println!("mock provider listening on http://{}", provider.addr());
        use std::io::Write;
        let _ = std::io::stdout().flush();
        stop.await;
        provider.shutdown().await;
        Ok(())
    })
}

async fn serve(mut config: Config, demo: bool, env: HashMap<String, String>) -> anyhow::Result<()> {
    for warning in &config.warnings {
        tracing::warn!("{warning}");
    }
    let settings = reagent::telemetry::Settings {
        capture_content: config.server.otel_capture_content,
    };
    match reagent::telemetry::init(&env, &settings) {
        Ok(true) => tracing::info!(
            semconv = reagent::telemetry::SEMCONV_VERSION,
            capture_content = settings.capture_content,
            "tracing: exporting OpenTelemetry traces over OTLP/HTTP"
        ),
        Ok(false) => {}
        Err(e) => tracing::warn!("tracing is off: {e}"),
    }
    // Bound first: a port in use stops start-up before the database file is created.
    let bind = config.server.bind;
    let listener =
        server::listen(bind).with_context(|| format!("cannot listen on {bind} (REAGENT_BIND)"))?;
    let demo_model = match demo {
        true => Some(start_demo(&mut config, &env).await?),
        false => None,
    };
    for line in config.summary().lines() {
        tracing::info!("config: {line}");
    }
    // Relative paths depend on the working directory: say where the data and the UI really are.
    tracing::info!(
        "database: {}",
        reagent::store::location(&config.server.database_url)
    );
    tracing::info!(
        "ui: {}",
        server::statics::describe(config.server.static_dir.as_deref())
    );
    let overrides = AppOverrides {
        mcp_in_background: true,
        ..AppOverrides::default()
    };
    let app = App::build(config, overrides)
        .await
        .context("cannot start the service")?;
    let served = app.run_until_stopped(listener, shutdown_signal()).await;
    // The spans of the last runs (and of runs handed over) leave before the process does.
    reagent::telemetry::flush(std::time::Duration::from_secs(5)).await;
    if let Some(provider) = demo_model {
        provider.shutdown().await;
    }
    served.context("server error")
}

/// Starts the demo model in-process and makes it the only model, saying so loudly.
async fn start_demo(
    config: &mut Config,
    env: &HashMap<String, String>,
) -> anyhow::Result<MockProvider> {
    let provider = MockProvider::start(MockConfig::demo())
        .await
        .context("cannot start the demo model")?;
    for note in config.use_demo_model(&provider.base_url(), env) {
        tracing::warn!("{note}");
    }
    tracing::warn!(
        "{DEMO_NOTICE}: --demo answers every run from a script (model 'demo', in-process at {}); \
         start without --demo, with LLM_API_KEY set, for a real model",
        provider.base_url()
    );
    Ok(provider)
}

/// Completes on Ctrl-C or, on Unix, SIGTERM (what `docker stop` and systemd send). The SIGTERM
/// handler is installed when this is called, not when the future is first polled: a test that
/// signals right after the "listening" line was otherwise sometimes killed by the default action.
fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    #[cfg(unix)]
    let sigterm = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate());
    async move {
        let ctrl_c = async {
            if let Err(e) = tokio::signal::ctrl_c().await {
                tracing::error!(error = %e, "cannot listen for Ctrl-C");
                std::future::pending::<()>().await;
            }
        };
        #[cfg(unix)]
        let terminate = async {
            match sigterm {
                Ok(mut sigterm) => {
                    sigterm.recv().await;
                }
                Err(e) => {
                    tracing::error!(error = %e, "cannot listen for SIGTERM");
                    std::future::pending::<()>().await;
                }
            }
        };
        #[cfg(not(unix))]
        let terminate = std::future::pending::<()>();
        tokio::select! {
            () = ctrl_c => {},
            () = terminate => {},
        }
    }
}
