//! The arguments of the subcommands that take many: `run`, `suite`, `soak`, `floor`, `facade`.

use clap::Args;

#[derive(Args)]
pub(crate) struct FacadeArgs {
    /// Runs through each API.
    #[arg(long, short = 'n', default_value_t = 400)]
    pub(crate) runs: usize,
    /// Unmeasured runs first (spread over the APIs).
    #[arg(long, default_value_t = 40)]
    pub(crate) warmup: usize,
    /// Tokens of each run's answer.
    #[arg(long, default_value_t = 20)]
    pub(crate) tokens: usize,
    /// Tool calls of each run (two streamed steps each: the tool's start and end).
    #[arg(long, default_value_t = 1)]
    pub(crate) tools: usize,
    /// Only these APIs beside /api/chat (comma-separated: v1, responses, ag-ui, ai-sdk, a2a,
    /// mcp); all when absent.
    #[arg(long, value_delimiter = ',')]
    pub(crate) apis: Vec<String>,
}

#[derive(Args)]
pub(crate) struct FloorArgs {
    #[arg(long, short = 'n', default_value_t = 1000)]
    pub(crate) streams: usize,
    #[arg(long, default_value_t = 200)]
    pub(crate) latency_ms: u64,
    #[arg(long, default_value_t = 50.0)]
    pub(crate) tokens_per_s: f64,
    #[arg(long, default_value_t = 100)]
    pub(crate) answer_tokens: usize,
    /// Start the streams evenly over this many seconds instead of all at once.
    #[arg(long, default_value_t = 0.0)]
    pub(crate) ramp_s: f64,
    /// Also run the same load through the server and through a minimal relay, and print both
    /// CPU costs per streamed token and their ratio.
    #[arg(long)]
    pub(crate) relay: bool,
    /// With --relay: tool iterations of each server run before its answer.
    #[arg(long, short = 'k', default_value_t = 1)]
    pub(crate) iterations: usize,
}

#[derive(Args)]
pub(crate) struct RunArgs {
    /// Spawn `reagent mock-provider` and `reagent serve` (binaries next to this one).
    #[arg(long, conflicts_with = "url")]
    pub(crate) spawn: bool,
    /// Base URL of a running reagent (its LLM should be a mock provider).
    #[arg(long, conflicts_with = "urls")]
    pub(crate) url: Option<String>,
    /// Several running instances on one database: each request goes to a random one.
    #[arg(long, value_delimiter = ',', conflicts_with_all = ["spawn", "spawn_instances"])]
    pub(crate) urls: Vec<String>,
    /// Spawn N instances on one PostgreSQL database (and a mock), requests spread over them.
    #[arg(long, conflicts_with = "spawn")]
    pub(crate) spawn_instances: Option<usize>,
    /// Their database; a fresh one is created (and dropped) on the test server when absent.
    #[arg(long, requires = "spawn_instances")]
    pub(crate) database_url: Option<String>,
    /// kill -9 a random spawned instance every SECS and restart it under the same name.
    #[arg(long, requires = "spawn_instances")]
    pub(crate) chaos_kill_every: Option<f64>,
    /// REAGENT_LEASE_TTL_S / _RENEW_S for the spawned instances (3 / 1 with chaos).
    #[arg(long)]
    pub(crate) lease_ttl_s: Option<u64>,
    #[arg(long)]
    pub(crate) lease_renew_s: Option<u64>,
    /// Pid of that server, for CPU and RSS.
    #[arg(long)]
    pub(crate) server_pid: Option<u32>,
    #[arg(long, short = 'n', default_value_t = 100)]
    pub(crate) conversations: usize,
    /// Conversations in flight at once (default: all of them).
    #[arg(long, short = 'c')]
    pub(crate) concurrency: Option<usize>,
    /// native, json, auto or mixed.
    #[arg(long, default_value = "native")]
    pub(crate) mode: String,
    /// The runs' engine: react, dag or auto; the server's default when absent.
    #[arg(long)]
    pub(crate) engine: Option<String>,
    /// The agent the conversations run (a configured one or one made through /api/agents).
    #[arg(long)]
    pub(crate) agent: Option<String>,
    #[arg(long, default_value_t = 0.0)]
    pub(crate) interrupt_rate: f64,
    #[arg(long, default_value_t = 0.0)]
    pub(crate) cancel_rate: f64,
    /// Tool iterations per run (spawned mock only).
    #[arg(long, short = 'k', default_value_t = 3)]
    pub(crate) iterations: usize,
    #[arg(long, default_value_t = 200)]
    pub(crate) latency_ms: u64,
    #[arg(long, default_value_t = 50.0)]
    pub(crate) tokens_per_s: f64,
    #[arg(long, default_value_t = 100)]
    pub(crate) answer_tokens: usize,
    #[arg(long, default_value_t = 0.0)]
    pub(crate) error_rate: f64,
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
    /// Start the conversations evenly over this many seconds instead of all at once.
    #[arg(long, default_value_t = 0.0)]
    pub(crate) ramp_s: f64,
}

#[derive(Args)]
pub(crate) struct SuiteArgs {
    /// Smaller scenarios (seconds instead of minutes).
    #[arg(long)]
    pub(crate) quick: bool,
    /// Repeat every scenario this many times and report medians.
    #[arg(long, default_value_t = 1)]
    pub(crate) repeat: usize,
    /// Only these scenarios (comma-separated: overhead, history, scale, streams, throughput).
    #[arg(long, value_delimiter = ',')]
    pub(crate) only: Vec<String>,
    /// Machine-readable results: by default target/benchmarks.json for the whole suite (what
    /// the plot reads), target/benchmarks-only.json with --only, so that one scenario's rerun
    /// does not overwrite the whole suite's figures.
    #[arg(long)]
    pub(crate) out: Option<std::path::PathBuf>,
}

#[derive(Args)]
pub(crate) struct SoakArgs {
    #[arg(long, default_value_t = 5.0)]
    pub(crate) minutes: f64,
    /// Conversations in flight at once.
    #[arg(long, default_value_t = 40)]
    pub(crate) concurrency: usize,
    /// Share of LLM requests the mock answers 503.
    #[arg(long, default_value_t = 0.05)]
    pub(crate) error_rate: f64,
}
