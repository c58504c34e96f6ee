//! The shared event writer's transaction alone ([`Store::write_batches`]), on a fresh SQLite
//! (or PostgreSQL) database: `runs` runs, each writing `per_tick` answer deltas per tick for
//! `ticks` ticks, every run in every tick's one transaction, as the writer does while that many
//! runs stream at once. Prints the process CPU time (all threads, SQLite's worker included) and
//! the bytes written to disk, per event, median of `repeat` fresh databases. Isolates
//! persistence's share of a streamed token from the HTTP/SSE path `reagent-loadgen` measures.
//!
//! ```text
//! cargo bench --bench writer -- runs=1000 ticks=80 per_tick=2 repeat=5
//! cargo bench --bench writer -- db=postgres://postgres@127.0.0.1:5432/test repeat=3
//! ```
//!
//! `fenced=false` writes the batches without a lease epoch (no fencing SELECT). On PostgreSQL
//! the figures are this process's alone (the database server's CPU and writes are another
//! process's), and each repetition's database is dropped afterwards.

// Test code may panic on what it did not expect (Cargo.toml [lints]).
#![allow(clippy::unwrap_used)]

use reagent::domain::{MessageKind, MessageRole, Mode};
use reagent::store::{NewConversation, NewMessage, NewRun, RunBatch, Store, StoredEvent, Written};
use sqlx::Connection;
use uuid::Uuid;

struct Args {
    runs: usize,
    ticks: usize,
    per_tick: usize,
    repeat: usize,
    fenced: bool,
    db: Option<String>,
}

fn args() -> Args {
    let mut a = Args {
        runs: 1000,
        ticks: 80,
        per_tick: 2,
        repeat: 5,
        fenced: true,
        db: None,
    };
    for arg in std::env::args().skip(1) {
        let Some((k, v)) = arg.split_once('=') else {
            continue; // cargo bench's own flags (--bench)
        };
        let n = || v.parse::<usize>().unwrap();
        match k {
            "runs" => a.runs = n(),
            "ticks" => a.ticks = n(),
            "per_tick" => a.per_tick = n(),
            "repeat" => a.repeat = n(),
            "fenced" => a.fenced = v.parse().unwrap(),
            "db" => a.db = Some(v.to_owned()),
            other => panic!("unknown argument {other}"),
        }
    }
    a
}

/// CPU time of every thread of this process so far, in ns (`/proc/self/task/*/schedstat`).
fn cpu_ns() -> u64 {
    let mut total = 0;
    for task in std::fs::read_dir("/proc/self/task").unwrap() {
        let path = task.unwrap().path().join("schedstat");
        if let Ok(s) = std::fs::read_to_string(path) {
            total += s.split_whitespace().next().unwrap().parse::<u64>().unwrap();
        }
    }
    total
}

/// Bytes this process has caused to be written to storage (`/proc/self/io`).
fn write_bytes() -> u64 {
    let io = std::fs::read_to_string("/proc/self/io").unwrap();
    io.lines()
        .find_map(|l| l.strip_prefix("write_bytes: "))
        .unwrap()
        .parse()
        .unwrap()
}

async fn new_run(store: &Store) -> Uuid {
    let conversation_id = store
        .create_conversation("", NewConversation::default())
        .await
        .unwrap()
        .id;
    let id = Uuid::new_v4();
    let run = NewRun {
        id,
        conversation_id,
        owner: String::new(),
        mode: Mode::Native,
        model: "m".into(),
        traceparent: None,
    };
    let query = NewMessage {
        id: None,
        conversation_id,
        role: MessageRole::User,
        kind: MessageKind::Query,
        content: "q".into(),
        run_id: Some(id),
        images: Vec::new(),
    };
    store.create_run_with_query(run, query).await.unwrap();
    id
}

/// One fresh database; returns (CPU ns per event, bytes written per event).
async fn measure(a: &Args, url: &str) -> (f64, f64) {
    let store = Store::connect(url).await.unwrap();
    let mut runs = Vec::with_capacity(a.runs);
    for _ in 0..a.runs {
        runs.push(new_run(&store).await);
    }
    let delta = r#"{"status":"delta","content":" token"}"#;
    let (cpu0, io0) = (cpu_ns(), write_bytes());
    let mut seq = 1;
    for _ in 0..a.ticks {
        let batches: Vec<RunBatch> = runs
            .iter()
            .map(|&run_id| RunBatch {
                run_id,
                events: (0..a.per_tick as i64)
                    .map(|i| StoredEvent {
                        seq: seq + i,
                        name: "answer".into(),
                        data: delta.into(),
                    })
                    .collect(),
                ceiling: None,
                checkpoint: None,
                finish: None,
                epoch: a.fenced.then_some(1),
            })
            .collect();
        let written = store.write_batches(&batches).await.unwrap();
        assert!(written.iter().all(|w| *w == Written::Stored(false)));
        seq += a.per_tick as i64;
    }
    let events = (a.runs * a.ticks * a.per_tick) as f64;
    let cpu = (cpu_ns() - cpu0) as f64 / events;
    let io = (write_bytes() - io0) as f64 / events;
    let stored = store.list_events(runs[0], 0).await.unwrap();
    assert_eq!(stored.len(), a.ticks * a.per_tick);
    store.close().await;
    (cpu, io)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() {
    let a = args();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (mut cpus, mut ios) = (Vec::new(), Vec::new());
    for i in 0..a.repeat {
        let dir = tempfile::tempdir().unwrap();
        let (cpu, io) = rt.block_on(async {
            let url = match &a.db {
                None => format!("sqlite://{}?mode=rwc", dir.path().join("w.db").display()),
                Some(admin) => {
                    let name = format!("reagent_writer_{}_{i}", std::process::id());
                    let mut c = sqlx::PgConnection::connect(admin).await.unwrap();
                    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
                        .execute(&mut c)
                        .await
                        .unwrap();
                    let base = admin.rsplit_once('/').unwrap().0;
                    format!("{base}/{name}")
                }
            };
            let measured = measure(&a, &url).await;
            if let Some(admin) = &a.db {
                let name = url.rsplit_once('/').unwrap().1;
                let mut c = sqlx::PgConnection::connect(admin).await.unwrap();
                sqlx::query(sqlx::AssertSqlSafe(format!(
                    "DROP DATABASE {name} WITH (FORCE)"
                )))
                .execute(&mut c)
                .await
                .unwrap();
            }
            measured
        });
        println!(
            "run {i}: {:.2} µs CPU and {:.0} bytes written per event",
            cpu / 1000.0,
            io
        );
        cpus.push(cpu);
        ios.push(io);
    }
    println!(
        "writer, {} runs x {} ticks x {} events (fenced: {}): median {:.2} µs CPU per event, {:.0} bytes written per event",
        a.runs,
        a.ticks,
        a.per_tick,
        a.fenced,
        median(cpus) / 1000.0,
        median(ios)
    );
}
