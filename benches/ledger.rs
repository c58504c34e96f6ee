//! The budget reservation's cost per LLM call (docs/configuration.md `[[budgets]]`,
//! `src/runs/budget/ledger/`) on SQLite and PostgreSQL. Three ways to make the same call to a
//! zero-latency scripted model, alternated in blocks on one fresh database so that drift hits
//! all alike:
//!
//! - `bare`: the model alone;
//! - `usage`: through a run's ledger with no budget (what every call pays: its usage recorded
//!   for `GET /api/usage`);
//! - `budget`: through a ledger with a `"*"` day budget that never refuses: the conditional
//!   reservation before the call and its release in the settlement on top.
//!
//! `budget − usage` is the reservation's own cost per call. Each variant runs `calls` calls
//! split over `concurrency` runs (tasks) in flight; the time per call is the block's wall time
//! over its calls (at concurrency 1 a call's latency, above it the inverse of the throughput),
//! and the CPU per call this process spent (SQLite runs in it; PostgreSQL's own CPU is not
//! counted), summed over the variant's blocks.
//!
//! ```text
//! cargo bench --bench ledger -- calls=2000 concurrency=1 repeat=7
//! cargo bench --bench ledger -- calls=4000 concurrency=32 repeat=7
//! cargo bench --bench ledger -- db=postgres://postgres@127.0.0.1:5432/postgres calls=2000
//! ```
//!
//! `db=` takes a PostgreSQL admin URL: the bench creates its own database and drops it after.

// Test code may panic on what it did not expect (Cargo.toml [lints]).
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Instant;

use reagent::config::{BudgetSpec, BudgetWindow};
use reagent::llm::{ChatRequest, Llm, Message};
use reagent::runs::ledger::Ledger;
use reagent::runs::Budgets;
use reagent::store::Store;
use reagent::testing::ScriptedLlm;
use sqlx::Connection;

#[derive(Clone)]
struct Args {
    calls: usize,
    concurrency: usize,
    repeat: usize,
    db: Option<String>,
}

fn args() -> Args {
    let mut a = Args {
        calls: 2000,
        concurrency: 1,
        repeat: 7,
        db: None,
    };
    for arg in std::env::args().skip(1) {
        let Some((k, v)) = arg.split_once('=') else {
            continue; // `--bench` and friends
        };
        let n = || -> usize {
            v.parse()
                .unwrap_or_else(|_| panic!("bad value for {k}: {v}"))
        };
        match k {
            "calls" => a.calls = n(),
            "concurrency" => a.concurrency = n().max(1),
            "repeat" => a.repeat = n().max(1),
            "db" => a.db = Some(v.to_string()),
            _ => panic!("unknown argument {k} (calls, concurrency, repeat, db)"),
        }
    }
    a
}

#[derive(Clone, Copy, PartialEq)]
enum Variant {
    Bare,
    Usage,
    Budget,
}

const VARIANTS: [(Variant, &str); 3] = [
    (Variant::Bare, "bare"),
    (Variant::Usage, "usage"),
    (Variant::Budget, "budget"),
];

/// A budget far above what the bench spends: every reservation is admitted.
fn budgets(variant: Variant) -> Arc<Budgets> {
    let mut b = Budgets::default();
    if variant == Variant::Budget {
        b.rules.push(BudgetSpec {
            tenant: "*".into(),
            window: BudgetWindow::Day,
            tokens: Some(1 << 50),
            cost_usd: None,
            warn_at_percent: 80,
        });
    }
    Arc::new(b)
}

/// One run's `calls` calls, one after the other.
async fn one_run(store: Store, variant: Variant, calls: usize) {
    let scripted = ScriptedLlm::native().without_recording();
    for _ in 0..calls {
        scripted.text("ok");
    }
    let llm: Arc<dyn Llm> = Arc::new(scripted);
    let ledger = match variant {
        Variant::Bare => None,
        Variant::Usage | Variant::Budget => {
            let run = uuid::Uuid::new_v4();
            Some(Ledger::new(store, budgets(variant), "", run, "bench"))
        }
    };
    let llm = match &ledger {
        Some(l) => l.wrap("scripted", llm),
        None => llm,
    };
    let request = ChatRequest::new(vec![Message::user("What is 6 × 7? Use the calculator.")]);
    for _ in 0..calls {
        let reply = llm.chat(request.clone()).await.unwrap();
        assert_eq!(reply.content, "ok");
    }
    // The run's end, as a run manager ends it: its last call settled, its holds released.
    if let Some(l) = ledger {
        l.finish().await;
    }
}

/// This process's CPU time (all threads), seconds: utime + stime of `/proc/self/stat` at
/// Linux's 100 ticks per second.
fn cpu_s() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<f64> = after
        .split(' ')
        .skip(11)
        .take(2)
        .map(|x| x.parse().unwrap())
        .collect();
    (f[0] + f[1]) / 100.0
}

/// Wall and CPU microseconds per call of one block.
async fn block(store: &Store, variant: Variant, a: &Args) -> (f64, f64) {
    let per_run = a.calls.div_ceil(a.concurrency);
    let (t0, c0) = (Instant::now(), cpu_s());
    let tasks: Vec<_> = (0..a.concurrency)
        .map(|_| tokio::spawn(one_run(store.clone(), variant, per_run)))
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let n = (per_run * a.concurrency) as f64;
    (
        1e6 * t0.elapsed().as_secs_f64() / n,
        1e6 * (cpu_s() - c0) / n,
    )
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

async fn fresh_db(a: &Args, dir: &std::path::Path) -> (String, Option<String>) {
    let Some(admin) = &a.db else {
        return (format!("sqlite://{}", dir.join("l.db").display()), None);
    };
    let name = format!("reagent_ledger_{}", uuid::Uuid::new_v4().simple());
    let mut c = sqlx::PgConnection::connect(admin).await.unwrap();
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
        .execute(&mut c)
        .await
        .unwrap();
    let base = admin.rsplit_once('/').map_or(admin.as_str(), |(b, _)| b);
    (format!("{base}/{name}"), Some(name))
}

fn main() {
    let a = args();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let (url, drop_name) = fresh_db(&a, dir.path()).await;
        let store = Store::connect(&url).await.unwrap();
        // Warm-up: the pools' connections, the statements' caches, the window row.
        for (v, _) in VARIANTS {
            block(&store, v, &Args { calls: 200, ..a.clone() }).await;
        }
        let mut times: Vec<Vec<f64>> = VARIANTS.iter().map(|_| Vec::new()).collect();
        let mut cpu: Vec<f64> = VARIANTS.iter().map(|_| 0.0).collect();
        for r in 0..a.repeat {
            // ABC CBA …: each variant as often early as late in a pair of rounds.
            let order: Vec<usize> = if r % 2 == 0 { vec![0, 1, 2] } else { vec![2, 1, 0] };
            for i in order {
                let (wall, c) = block(&store, VARIANTS[i].0, &a).await;
                times[i].push(wall);
                cpu[i] += c / a.repeat as f64;
            }
        }
        let backend = if drop_name.is_some() { "PostgreSQL" } else { "SQLite" };
        println!(
            "ledger on {backend}: {} calls per block, {} runs in flight, {} blocks each (µs per call: wall median, this process's CPU mean)",
            a.calls, a.concurrency, a.repeat
        );
        let m: Vec<f64> = times.iter().map(|t| median(t.clone())).collect();
        for (((_, name), t), c) in VARIANTS.iter().zip(&times).zip(&cpu) {
            let all: Vec<String> = t.iter().map(|x| format!("{x:.1}")).collect();
            println!(
                "  {name:<7} wall {:9.1}  CPU {c:8.1}   wall per block [{}]",
                median(t.clone()),
                all.join(", ")
            );
        }
        println!(
            "  usage recorded (usage − bare): wall {:+.1}, CPU {:+.1} µs per call",
            m[1] - m[0],
            cpu[1] - cpu[0]
        );
        println!(
            "  the reservation (budget − usage): wall {:+.1}, CPU {:+.1} µs per call",
            m[2] - m[1],
            cpu[2] - cpu[1]
        );
        drop(store);
        if let (Some(admin), Some(name)) = (&a.db, drop_name) {
            let mut c = sqlx::PgConnection::connect(admin).await.unwrap();
            let sql = format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)");
            sqlx::query(sqlx::AssertSqlSafe(sql.as_str())).execute(&mut c).await.unwrap();
        }
    });
}
