//! The cost reagent adds to an MCP tool call over stdio: the latency of `Tool::call` on an
//! MCP tool minus the server's own handling time (which the server measures and returns).
//! The server is `tests/peers/mcp_bench_peer.py`, raw JSON-RPC in Python with no SDK, so its
//! part is small and known; what remains is reagent's (rmcp's framing and dispatch, the
//! supervisor's checks, content mapping) plus the two pipe hops and Python's line read.
//!
//! Run (release profile; `scripts/peers.sh` first; key=value arguments, all optional):
//!
//! ```text
//! cargo bench --bench mcp -- calls=5000 warmup=200
//! ```

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Instant;

use reagent::config::Config;
use reagent::tools::mcp::McpManager;
use serde_json::json;

fn arg(name: &str, default: usize) -> usize {
    std::env::args()
        .find_map(|a| a.strip_prefix(&format!("{name}="))?.parse().ok())
        .unwrap_or(default)
}

fn python() -> PathBuf {
    let root = std::env::var_os("REAGENT_PEERS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| "/root".into()))
                .join(".cache/reagent-peers")
        });
    root.join("venv/bin/python")
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

#[tokio::main]
async fn main() {
    let calls = arg("calls", 5000);
    let warmup = arg("warmup", 200);
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/peers/mcp_bench_peer.py");
    let toml = format!(
        "[[mcp]]\nname = \"bench\"\ncommand = {:?}\nargs = [{:?}]\n",
        python().display().to_string(),
        script.display().to_string()
    );
    let config = Config::load_from(Some(&toml), &HashMap::new()).expect("config");
    let mcp = McpManager::start(&config.mcp, reqwest::Client::new(), None).await;
    let tool = mcp
        .tools()
        .into_iter()
        .find(|t| t.name() == "bench__timed")
        .expect("bench__timed listed: run scripts/peers.sh");
    let mut added = Vec::with_capacity(calls);
    let mut total = Vec::with_capacity(calls);
    for i in 0..warmup + calls {
        let started = Instant::now();
        let out = tool.call(json!({})).await.expect("call");
        let elapsed = started.elapsed().as_nanos() as f64;
        let handled: f64 = out
            .content
            .strip_prefix("handled_ns=")
            .and_then(|n| n.parse().ok())
            .expect("handled_ns");
        if i >= warmup {
            added.push((elapsed - handled) / 1e6);
            total.push(elapsed / 1e6);
        }
    }
    added.sort_by(f64::total_cmp);
    total.sort_by(f64::total_cmp);
    println!(
        "mcp stdio: {calls} calls; added by reagent p50 {:.3} ms p99 {:.3} ms; whole call p50 {:.3} ms p99 {:.3} ms",
        percentile(&added, 0.5),
        percentile(&added, 0.99),
        percentile(&total, 0.5),
        percentile(&total, 0.99),
    );
    mcp.shutdown().await;
}
