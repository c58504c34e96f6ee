//! Persistence throughput through the public HTTP/SSE API: an in-process `App` on a fresh
//! database, an in-process `MockProvider`, and `runs` agent runs (`POST /api/chat`, SSE read to
//! `done`) with at most `concurrency` in flight. Every stream is checked (ids 1..n, `done`
//! last); after the last stream ends the bench waits until the database holds every streamed
//! event (so "events persisted/s" counts events that reached the database), then checks that no
//! run is left `running`.
//!
//! Run (release profile; key=value arguments, all optional):
//!
//! ```text
//! cargo bench --bench persist -- runs=3000 concurrency=200 iterations=1 tokens=20
//! cargo bench --bench persist -- runs=2000 concurrency=2000 iterations=3 tokens=100 \
//!     latency_ms=200 tokens_per_s=50
//! cargo bench --bench persist -- db=postgres://postgres@127.0.0.1:5432/test runs=2000
//! ```
//!
//! `repeat=N` repeats the measurement on fresh databases and prints the median. `db=` takes a
//! PostgreSQL admin URL: each repetition creates and drops its own database. `startups=N`
//! then starts the release `reagent` binary N times on the filled database and prints the
//! median time from spawn to the first `/readyz` 200. `flush_ms=` overrides the event writer's
//! tick. `RUST_LOG=warn` shows the server's log (e.g. why a request failed).

// Test code may panic on what it did not expect (Cargo.toml [lints]).
#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use eventsource_stream::Eventsource;
use futures::StreamExt;
use reagent::app::{App, AppOverrides};
use reagent::config::Config;
use reagent::server::serve;
use reagent_mock::{MockConfig, MockProvider};
use sqlx::Connection;
use tokio::sync::Semaphore;

#[derive(Clone, Debug)]
struct Args {
    runs: usize,
    concurrency: usize,
    iterations: usize,
    tokens: usize,
    latency_ms: u64,
    tokens_per_s: f64,
    repeat: usize,
    db: Option<String>,
    /// After the load, start the real binary on the filled database this many times and time
    /// spawn → first `/readyz` 200.
    startups: usize,
    /// The run manager's flush interval in ms (its default otherwise).
    flush_ms: Option<u64>,
}

fn num<T: std::str::FromStr>(k: &str, v: &str) -> T {
    v.parse()
        .unwrap_or_else(|_| panic!("bad value for {k}: {v}"))
}

fn args() -> Args {
    let mut a = Args {
        runs: 2000,
        concurrency: 200,
        iterations: 1,
        tokens: 20,
        latency_ms: 0,
        tokens_per_s: 0.0,
        repeat: 1,
        db: None,
        startups: 0,
        flush_ms: None,
    };
    for arg in std::env::args().skip(1) {
        let Some((k, v)) = arg.split_once('=') else {
            continue; // `--bench` and friends
        };
        match k {
            "runs" => a.runs = num(k, v),
            "concurrency" => a.concurrency = num(k, v),
            "iterations" => a.iterations = num(k, v),
            "tokens" => a.tokens = num(k, v),
            "latency_ms" => a.latency_ms = num(k, v),
            "tokens_per_s" => a.tokens_per_s = num(k, v),
            "repeat" => a.repeat = num(k, v),
            "db" => a.db = Some(v.to_string()),
            "startups" => a.startups = num(k, v),
            "flush_ms" => a.flush_ms = Some(num(k, v)),
            other => panic!("unknown argument {other}"),
        }
    }
    a
}

struct Outcome {
    runs_per_s: f64,
    events_per_s: f64,
    events: u64,
    p50_ms: f64,
    p99_ms: f64,
    persisted_lag_ms: f64,
    startup_ms: Vec<f64>,
}

/// Spawn → first `/readyz` 200 of `reagent serve` on `db_url` (restart recovery included).
async fn startup_ms(db_url: &str, llm: &str) -> f64 {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let dir = tempfile::tempdir().unwrap();
    let t = Instant::now();
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_reagent"))
        .arg("serve")
        .current_dir(dir.path())
        .env_clear()
        .env("REAGENT_BIND", format!("127.0.0.1:{port}"))
        .env("DATABASE_URL", db_url)
        .env("LLM_BASE_URL", llm)
        .env("LLM_API_KEY", "bench")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let client = reqwest::Client::new();
    let url = format!("http://127.0.0.1:{port}/readyz");
    loop {
        if let Ok(r) = client.get(&url).send().await {
            if r.status() == 200 {
                break;
            }
        }
        assert!(t.elapsed() < Duration::from_secs(30), "no /readyz 200");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let ms = t.elapsed().as_secs_f64() * 1000.0;
    let _ = child.kill().await;
    ms
}

/// A fresh database URL (and what to drop afterwards).
async fn fresh_db(a: &Args, dir: &tempfile::TempDir, i: usize) -> (String, Option<String>) {
    match &a.db {
        None => (
            format!("sqlite://{}", dir.path().join(format!("b{i}.db")).display()),
            None,
        ),
        Some(admin) => {
            let name = format!("reagent_bench_{}", uuid::Uuid::new_v4().simple());
            let mut c = sqlx::PgConnection::connect(admin).await.unwrap();
            sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
                .execute(&mut c)
                .await
                .unwrap();
            let base = admin.rsplit_once('/').map(|(b, _)| b).unwrap_or(admin);
            (format!("{base}/{name}"), Some(name))
        }
    }
}

async fn count_events(url: &str) -> (i64, i64) {
    let events = "SELECT CAST(COALESCE(SUM(n), 0) AS BIGINT) FROM events";
    let running = "SELECT COUNT(*) FROM runs WHERE status = 'running'";
    if url.starts_with("sqlite:") {
        let mut c = sqlx::SqliteConnection::connect(url).await.unwrap();
        let e: i64 = sqlx::query_scalar(events).fetch_one(&mut c).await.unwrap();
        let r: i64 = sqlx::query_scalar(running).fetch_one(&mut c).await.unwrap();
        (e, r)
    } else {
        let mut c = sqlx::PgConnection::connect(url).await.unwrap();
        let e: i64 = sqlx::query_scalar(events).fetch_one(&mut c).await.unwrap();
        let r: i64 = sqlx::query_scalar(running).fetch_one(&mut c).await.unwrap();
        (e, r)
    }
}

/// One streamed run: its event count, checked.
async fn one_run(client: &reqwest::Client, base: &str) -> Result<u64, String> {
    let r = client
        .post(format!("{base}/api/chat"))
        .header("accept", "text/event-stream")
        .json(&serde_json::json!({"query": "bench"}))
        .send()
        .await
        .map_err(|e| e.to_string())?;
    if !r.status().is_success() {
        return Err(format!("status {}", r.status()));
    }
    let mut stream = r.bytes_stream().eventsource();
    let mut n = 0u64;
    let mut last = String::new();
    while let Some(ev) = stream.next().await {
        let ev = ev.map_err(|e| e.to_string())?;
        n += 1;
        if ev.id != n.to_string() {
            return Err(format!("event id {} where {n} was due", ev.id));
        }
        last = ev.event;
    }
    if last != "done" {
        return Err(format!("stream ended with {last:?}, not done"));
    }
    Ok(n)
}

/// The app on `db_url` served on a local port, with its stop signal and server task.
struct Served {
    app: App,
    base: String,
    stop: tokio::sync::oneshot::Sender<()>,
    server: tokio::task::JoinHandle<std::io::Result<()>>,
}

/// Builds the app on `db_url` with the mock at `llm` and serves it.
async fn serve_app(a: &Args, db_url: &str, llm: String) -> Served {
    let mut env = HashMap::new();
    env.insert("DATABASE_URL".to_string(), db_url.to_string());
    env.insert("LLM_BASE_URL".to_string(), llm);
    env.insert("LLM_API_KEY".to_string(), "bench".to_string());
    env.insert("LLM_MAX_RETRIES".to_string(), "0".to_string());
    let config = Config::load_from(None, &env).unwrap();
    let overrides = AppOverrides {
        flush_interval: a.flush_ms.map(Duration::from_millis),
        ..AppOverrides::default()
    };
    let app = App::build(config, overrides).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (stop, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(serve(listener, app.router(), async {
        let _ = stop_rx.await;
    }));
    Served {
        app,
        base,
        stop,
        server,
    }
}

/// What the runs' streams gave: events in all, each run's latency, and the broken streams.
struct Streamed {
    events: u64,
    latencies: Vec<Duration>,
    errors: Vec<String>,
}

/// `a.runs` runs against `base` through `client`, at most `a.concurrency` in flight.
async fn drive_runs(a: &Args, client: &reqwest::Client, base: &str) -> Streamed {
    let gate = Arc::new(Semaphore::new(a.concurrency));
    let mut tasks = Vec::with_capacity(a.runs);
    for _ in 0..a.runs {
        let permit = gate.clone().acquire_owned().await.unwrap();
        let client = client.clone();
        let base = base.to_string();
        tasks.push(tokio::spawn(async move {
            let t = Instant::now();
            let r = one_run(&client, &base).await;
            drop(permit);
            r.map(|n| (n, t.elapsed()))
        }));
    }
    let mut out = Streamed {
        events: 0,
        latencies: Vec::with_capacity(a.runs),
        errors: Vec::new(),
    };
    for t in tasks {
        match t.await.unwrap() {
            Ok((n, d)) => {
                out.events += n;
                out.latencies.push(d);
            }
            Err(e) => out.errors.push(e),
        }
    }
    out
}

/// Waits (up to two minutes) until the database holds `events`; `(stored, running)`.
async fn wait_until_stored(db_url: &str, events: u64) -> (i64, i64) {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let (stored, running) = count_events(db_url).await;
        if stored as u64 >= events || Instant::now() > deadline {
            return (stored, running);
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Drops the repetition's own PostgreSQL database, if it made one.
async fn drop_db(pg_name: Option<String>, admin: &Option<String>) {
    if let (Some(name), Some(admin)) = (pg_name, admin) {
        let mut c = sqlx::PgConnection::connect(admin).await.unwrap();
        let _ = sqlx::query(sqlx::AssertSqlSafe(format!(
            "DROP DATABASE {name} WITH (FORCE)"
        )))
        .execute(&mut c)
        .await;
    }
}

async fn measure(a: &Args, i: usize) -> Outcome {
    let dir = tempfile::tempdir().unwrap();
    let (db_url, pg_name) = fresh_db(a, &dir, i).await;
    let mock = MockProvider::start(MockConfig {
        latency: Duration::from_millis(a.latency_ms),
        tokens_per_s: a.tokens_per_s,
        answer_tokens: a.tokens,
        tool_iterations: a.iterations,
        ..MockConfig::default()
    })
    .await
    .unwrap();
    let served = serve_app(a, &db_url, mock.base_url()).await;
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(a.concurrency)
        .build()
        .unwrap();
    let started = Instant::now();
    let Streamed {
        events,
        mut latencies,
        errors,
    } = drive_runs(a, &client, &served.base).await;
    let streamed = started.elapsed();
    // Wait until the database holds every streamed event.
    let (stored, running) = wait_until_stored(&db_url, events).await;
    let persisted = started.elapsed();
    served.app.shutdown(Duration::from_secs(10)).await;
    let _ = served.stop.send(());
    let _ = served.server.await;
    let mut startups = Vec::new();
    for _ in 0..a.startups {
        startups.push(startup_ms(&db_url, &mock.base_url()).await);
    }
    mock.shutdown().await;
    drop_db(pg_name, &a.db).await;
    assert!(
        errors.is_empty(),
        "{} broken streams: {:?}",
        errors.len(),
        &errors[..errors.len().min(5)]
    );
    assert_eq!(stored as u64, events, "events streamed vs stored");
    assert_eq!(running, 0, "runs left running");
    latencies.sort();
    let pct = |p: f64| {
        let i = ((latencies.len() as f64 - 1.0) * p).round() as usize;
        latencies[i].as_secs_f64() * 1000.0
    };
    Outcome {
        runs_per_s: a.runs as f64 / persisted.as_secs_f64(),
        events_per_s: events as f64 / persisted.as_secs_f64(),
        events,
        p50_ms: pct(0.5),
        p99_ms: pct(0.99),
        persisted_lag_ms: (persisted - streamed).as_secs_f64() * 1000.0,
        startup_ms: startups,
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() {
    let a = args();
    if std::env::var_os("RUST_LOG").is_some() {
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_writer(std::io::stderr)
            .init();
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut outcomes = Vec::new();
    for i in 0..a.repeat.max(1) {
        let o = rt.block_on(measure(&a, i));
        println!(
            "rep {i}: {:.0} runs/s, {:.0} events/s persisted ({} events), run p50 {:.1} ms p99 {:.1} ms, db lag after last stream {:.1} ms",
            o.runs_per_s, o.events_per_s, o.events, o.p50_ms, o.p99_ms, o.persisted_lag_ms
        );
        if !o.startup_ms.is_empty() {
            println!(
                "rep {i}: start-up to /readyz on the filled database: median {:.1} ms of {:?}",
                median(o.startup_ms.clone()),
                o.startup_ms
            );
        }
        outcomes.push(o);
    }
    println!(
        "median of {}: {:.0} runs/s, {:.0} events/s, run p50 {:.1} ms, p99 {:.1} ms ({:?})",
        outcomes.len(),
        median(outcomes.iter().map(|o| o.runs_per_s).collect()),
        median(outcomes.iter().map(|o| o.events_per_s).collect()),
        median(outcomes.iter().map(|o| o.p50_ms).collect()),
        median(outcomes.iter().map(|o| o.p99_ms).collect()),
        a
    );
}
