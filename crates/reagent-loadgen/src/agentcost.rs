//! `agents`: what a run of an agent made through `/api/agents` costs against a run of the same
//! agent from `config.toml` (docs/api.md "Agents": API agents are read at each run start, from
//! the database). One mock and one server, whose configuration has the agent `configured`; the
//! same settings are then POSTed as the agent `made`, and the two are checked to be the same
//! agent but for name and source. The same short runs (one tool call, a short answer) go to each
//! in blocks alternated A B B A …, so that drift on a shared machine hits both alike; per block
//! the server's CPU per run, runs per second and how busy the machine was; medians over blocks,
//! and the ratio of each round's pair, whose spread is the noise the medians are judged against.

use anyhow::Context;
use serde_json::{json, Value};

use crate::load::{self, Load};
use crate::pgdb::{PgDb, PG_ADMIN_URL};
use crate::spawn::{Mock, MockFlags, Server, ServerSpec, TempDir, SCRIPTED};
use crate::stats::median;
use crate::variants::{median_of, print_table, Sample, Variant, VariantArgs};

#[cfg(test)]
mod tests;

/// The configured agent; the API agent is the same under another name.
const CONFIGURED: &str = r#"[[agents]]
name = "configured"
description = "Answers arithmetic with the calculator"
system_prompt = "You answer arithmetic questions. Use the calculator, then say the result."
tools = ["calculator", "current_time"]
engine = "react"
max_iterations = 4
"#;

fn made() -> Value {
    json!({
        "name": "made",
        "description": "Answers arithmetic with the calculator",
        "system_prompt": "You answer arithmetic questions. Use the calculator, then say the result.",
        "tools": ["calculator", "current_time"],
        "engine": "react",
        "max_iterations": 4,
    })
}

/// The fields two agents must share to be "the same settings" (`GET /api/agents` shows them).
const SAME: [&str; 6] = [
    "description",
    "model",
    "tools",
    "engine",
    "max_iterations",
    "has_system_prompt",
];

async fn check_same(http: &reqwest::Client, base: &str) -> anyhow::Result<()> {
    let r = http
        .post(format!("{base}/api/agents"))
        .json(&made())
        .send()
        .await?;
    anyhow::ensure!(
        r.status() == reqwest::StatusCode::CREATED,
        "POST /api/agents → {}: {}",
        r.status(),
        r.text().await.unwrap_or_default()
    );
    let all: Vec<Value> = http
        .get(format!("{base}/api/agents"))
        .send()
        .await?
        .json()
        .await?;
    let find = |name: &str| all.iter().find(|a| a["name"] == name).cloned();
    let (Some(a), Some(b)) = (find("configured"), find("made")) else {
        anyhow::bail!("GET /api/agents lacks an agent: {all:?}");
    };
    anyhow::ensure!(
        a["source"] == "config" && b["source"] == "api",
        "sources: {a} / {b}"
    );
    for key in SAME {
        anyhow::ensure!(a[key] == b[key], "{key} differs: {} / {}", a[key], b[key]);
    }
    Ok(())
}

/// The agents' names on the server, in the table's order.
const NAMES: [&str; 2] = ["configured", "made"];

/// `agents`: the server, the blocks, the table, the ratio (a failed stream is an error).
pub async fn agents(http: &reqwest::Client, block: VariantArgs) -> anyhow::Result<bool> {
    let dir = TempDir::new()?;
    let config = dir.path().join("agents.toml");
    std::fs::write(&config, CONFIGURED)?;
    let db = match block.pg {
        true => Some(PgDb::create(PG_ADMIN_URL).await?),
        false => None,
    };
    let flags = MockFlags {
        tool_iterations: 1,
        answer_tokens: block.tokens,
        ..MockFlags::default()
    };
    let mock = Mock::start(&flags).await?;
    let mut env: Vec<(&str, String)> = SCRIPTED.iter().map(|(k, v)| (*k, v.to_string())).collect();
    env.push(("REAGENT_CONFIG", config.display().to_string()));
    env.extend(db.iter().map(|d| ("DATABASE_URL", d.url.clone())));
    let spec = ServerSpec::new(&mock.base_url, &env)?;
    let server = spec.start(http).await.context("server")?;
    check_same(http, &server.base).await?;
    let samples = blocks(http, &server, &block, &flags).await?;
    let variants = [
        Variant {
            name: "configured agent",
            env: vec![],
        },
        Variant {
            name: "API agent (v1)",
            env: vec![],
        },
    ];
    let title = match block.pg {
        true => "agents (PostgreSQL)",
        false => "agents (SQLite)",
    };
    print_table(title, &flags, &variants, &block, &samples);
    print_ratio(&samples);
    server.stop(std::time::Duration::from_secs(20)).await?;
    drop(spec);
    if let Some(db) = db {
        db.drop().await?;
    }
    Ok(true)
}

/// A warm-up of each agent, then the rounds: one block per agent, the order reversed every
/// other round; per agent, what each of its blocks measured.
async fn blocks(
    http: &reqwest::Client,
    server: &Server,
    block: &VariantArgs,
    flags: &MockFlags,
) -> anyhow::Result<Vec<Vec<Sample>>> {
    let load = |n: usize, agent: &str| Load {
        conversations: n,
        concurrency: block.concurrency.max(1),
        mode: "native".into(),
        agent: Some(agent.to_string()),
        ..Load::default()
    };
    let run = |n: usize, i: usize| {
        let load = load(n, NAMES[i]);
        async move {
            let r = load::run(http, &server.base, Some(server.pid), &load).await;
            anyhow::ensure!(
                r.errors == 0,
                "{}: {} errors, e.g. {:?}",
                NAMES[i],
                r.errors,
                r.error_samples
            );
            Ok(r)
        }
    };
    // Warm-up: connections, statement caches, the allocators, each agent's first lookup.
    for i in 0..NAMES.len() {
        run(block.concurrency.max(1) * 4, i).await?;
    }
    let mut samples: Vec<Vec<Sample>> = vec![Vec::new(), Vec::new()];
    for b in 0..block.blocks.max(1) {
        let order = if b % 2 == 0 { [0, 1] } else { [1, 0] };
        for i in order {
            let r = run(block.runs, i).await?;
            samples[i].push(Sample::of(&r, flags.answer_tokens));
        }
    }
    Ok(samples)
}

/// The API agent against the configured one.
#[derive(Debug, PartialEq)]
struct Ratios {
    /// Of the median CPU per run.
    cpu: f64,
    /// Of the median runs per second.
    runs_per_s: f64,
    /// CPU per run of each round's pair (its two blocks ran back to back): lowest, median,
    /// highest — how much two equal loads differ here.
    rounds: (f64, f64, f64),
}

fn ratios(samples: &[Vec<Sample>]) -> Ratios {
    let (configured, made) = (&samples[0], &samples[1]);
    let per_round: Vec<f64> = configured
        .iter()
        .zip(made)
        .map(|(c, m)| m.cpu_us_per_run / c.cpu_us_per_run)
        .collect();
    let low = per_round.iter().copied().fold(f64::INFINITY, f64::min);
    let high = per_round.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let of = |f: fn(&Sample) -> f64| median_of(made, f) / median_of(configured, f);
    Ratios {
        cpu: of(|s| s.cpu_us_per_run),
        runs_per_s: of(|s| s.runs_per_s),
        rounds: (low, median(&per_round), high),
    }
}

fn print_ratio(samples: &[Vec<Sample>]) {
    let r = ratios(samples);
    let (low, mid, high) = r.rounds;
    println!(
        "  API agent / configured agent: CPU per run {:.3}, runs/s {:.3}; per round CPU ratios {low:.3}–{high:.3} (median {mid:.3})",
        r.cpu, r.runs_per_s
    );
}
