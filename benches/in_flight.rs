//! What the durable in-flight record costs a call to a tool that is not idempotent: the run
//! waits, before the call leaves the process, until the checkpoint listing it is committed
//! ([`EventWriter::checkpoint_durably`]: the shared event writer writes it at once instead of
//! at its next tick, fenced by the run's lease epoch). Idempotent calls do not wait
//! ([`EventWriter::checkpoint`] returns at once; its time is printed for comparison).
//!
//! `runs` runs at once, each making `calls` calls: append `tool_start`, wait for the durable
//! checkpoint (timed), "run the tool" for `tool_ms`, append `tool_end`. Prints the wait's
//! median, p90 and p99, and the whole measurement's time. `durable=false` stores the in-flight
//! checkpoint as before this record existed (at the next tick, no wait), for comparison.
//!
//! ```text
//! cargo bench --bench in_flight -- runs=1 calls=200
//! cargo bench --bench in_flight -- runs=50 calls=40
//! cargo bench --bench in_flight -- db=postgres://postgres@127.0.0.1:5432/test runs=1 calls=200
//! ```
//!
//! `db=` takes a PostgreSQL admin URL (a database is created and dropped); SQLite otherwise
//! (a temp file, WAL, as the server runs it). `flush_ms` is the writer's tick (the server's
//! default: 100).

// Test code may panic on what it did not expect (Cargo.toml [lints]).
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use reagent::agent::checkpoint::CheckpointJson;
use reagent::domain::{MessageKind, MessageRole, Mode};
use reagent::runs::persist::{EventWriter, Fence};
use reagent::runs::EventLog;
use reagent::store::{NewConversation, NewMessage, NewRun, Store};
use sqlx::Connection;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

struct Args {
    runs: usize,
    calls: usize,
    tool_ms: u64,
    flush_ms: u64,
    durable: bool,
    db: Option<String>,
}

fn args() -> Args {
    let mut a = Args {
        runs: 1,
        calls: 200,
        tool_ms: 5,
        flush_ms: 100,
        durable: true,
        db: None,
    };
    for arg in std::env::args().skip(1) {
        let Some((k, v)) = arg.split_once('=') else {
            continue; // cargo bench's own flags (--bench)
        };
        let n = || v.parse::<usize>().unwrap();
        match k {
            "runs" => a.runs = n(),
            "calls" => a.calls = n(),
            "tool_ms" => a.tool_ms = n() as u64,
            "flush_ms" => a.flush_ms = n() as u64,
            "durable" => a.durable = v.parse().unwrap(),
            "db" => a.db = Some(v.to_owned()),
            other => panic!("unknown argument {other}"),
        }
    }
    a
}

/// A running run leased to this process: its id and lease epoch.
async fn new_run(store: &Store) -> (Uuid, i64) {
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
    let taken = store
        .take_run(id, "bench", Duration::from_secs(60))
        .await
        .unwrap()
        .unwrap();
    (id, taken.epoch)
}

/// A checkpoint of about 4 KB, as a run a few iterations in writes.
fn checkpoint(call: usize) -> CheckpointJson {
    let history = "{\"role\":\"tool\",\"content\":\"an observation of some length\"},".repeat(70);
    CheckpointJson::from(format!(
        "{{\"iterations\":{call},\"messages\":[{history}{{}}],\"in_flight\":[{{\"call_id\":\"c{call}\",\"tool\":\"charge\",\"arguments\":{{}}}}]}}"
    ))
}

/// One run's calls; returns the durable waits (µs) and the plain checkpoint's cost (ns).
async fn calls(a: &Args, writer: Arc<EventWriter>, run: (Uuid, i64)) -> (Vec<u64>, Vec<u64>) {
    let (id, epoch) = run;
    let log = Arc::new(EventLog::new());
    let fence = Fence {
        epoch,
        lost: CancellationToken::new(),
    };
    writer.register_fenced(id, log.clone(), Some(fence));
    let (mut durable, mut plain) = (Vec::new(), Vec::new());
    for call in 0..a.calls {
        log.append(
            "step",
            format!("{{\"type\":\"tool_start\",\"call\":{call}}}"),
        );
        writer.notify();
        let started = Instant::now();
        if a.durable {
            writer
                .checkpoint_durably(id, log.len() as u64, checkpoint(call))
                .await
                .unwrap();
        } else {
            // As before the durable record, for comparison: stored at the next tick.
            writer.checkpoint(id, log.len() as u64, checkpoint(call));
        }
        durable.push(started.elapsed().as_micros() as u64);
        tokio::time::sleep(Duration::from_millis(a.tool_ms)).await;
        log.append("step", format!("{{\"type\":\"tool_end\",\"call\":{call}}}"));
        let json = checkpoint(call);
        let started = Instant::now();
        writer.checkpoint(id, log.len() as u64, json);
        plain.push(started.elapsed().as_nanos() as u64);
    }
    writer.finish(id, None).await.unwrap();
    (durable, plain)
}

fn pct(v: &[u64], p: f64) -> u64 {
    v[((v.len() - 1) as f64 * p).round() as usize]
}

async fn measure(a: &Args, url: &str) {
    let store = Store::connect(url).await.unwrap();
    let writer = EventWriter::new(store.clone(), Duration::from_millis(a.flush_ms));
    let task = tokio::spawn(writer.clone().run());
    let mut runs = Vec::new();
    for _ in 0..a.runs {
        runs.push(new_run(&store).await);
    }
    let started = Instant::now();
    let tasks: Vec<_> = runs
        .into_iter()
        .map(|run| {
            let writer = writer.clone();
            async move { calls(a, writer, run).await }
        })
        .collect();
    let results = futures::future::join_all(tasks).await;
    let took = started.elapsed();
    let (mut durable, mut plain): (Vec<u64>, Vec<u64>) = (Vec::new(), Vec::new());
    for (d, p) in results {
        durable.extend(d);
        plain.extend(p);
    }
    durable.sort_unstable();
    plain.sort_unstable();
    println!(
        "{} ({} runs x {} calls, tick {} ms, tool {} ms, durable {}): in-flight checkpoint wait \
         per call median {:.2} ms, p90 {:.2} ms, p99 {:.2} ms; plain checkpoint {} ns median \
         (no wait); {:.2} s in all",
        store.backend(),
        a.runs,
        a.calls,
        a.flush_ms,
        a.tool_ms,
        a.durable,
        pct(&durable, 0.5) as f64 / 1000.0,
        pct(&durable, 0.9) as f64 / 1000.0,
        pct(&durable, 0.99) as f64 / 1000.0,
        pct(&plain, 0.5),
        took.as_secs_f64()
    );
    writer.stop();
    task.await.unwrap();
    store.close().await;
}

fn main() {
    let a = args();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    rt.block_on(async {
        let url = match &a.db {
            None => format!("sqlite://{}?mode=rwc", dir.path().join("b.db").display()),
            Some(admin) => {
                let name = format!("reagent_in_flight_{}", std::process::id());
                let mut c = sqlx::PgConnection::connect(admin).await.unwrap();
                sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
                    .execute(&mut c)
                    .await
                    .unwrap();
                format!("{}/{name}", admin.rsplit_once('/').unwrap().0)
            }
        };
        measure(&a, &url).await;
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
    });
}
