//! The real `reagent` binary with a run in flight: SIGTERM must cancel the run, record its final
//! state and exit 0 within the grace period; `kill -9` must leave a run that the next start
//! marks `failed` ("interrupted by server restart") with a replayable event log. And the binary
//! as a newcomer meets it: started in an empty directory it serves the UI compiled into it (or
//! the `REAGENT_STATIC_DIR` folder), logs where its database and UI are, one access-log line per
//! request and one line per finished run.
//!
//! Each child runs in an empty temp directory (its `config.toml` sets a short
//! `shutdown_grace_s`) with a cleared environment, a temp SQLite database and an in-process
//! [`FakeOpenAi`] whose replies take far longer than the test, so "during a run" is a state, not
//! a timing guess. The child binds port 0 and the test reads the address from its log line.

use std::path::Path;
use std::time::{Duration, Instant};

use reagent::agent::RunStatus;
use reagent::store::Store;
use reagent::testing::fake_openai::{FakeOpenAi, FakeReply};
use serde_json::{json, Value};

use crate::support::child::Server;
use crate::support::sse::{assert_ids_rise_with_one_crash_gap, read_all};

/// `server.shutdown_grace_s` of the children.
const GRACE_S: u64 = 3;

/// Starts the binary on `db_url` with `llm` as its only model and waits for it to listen.
async fn start(dir: &Path, db_url: &str, llm: &FakeOpenAi) -> Server {
    start_with(dir, db_url, llm, &[]).await
}

async fn start_with(dir: &Path, db_url: &str, llm: &FakeOpenAi, extra: &[(&str, &str)]) -> Server {
    let url = llm.base_url();
    let mut env = vec![
        ("DATABASE_URL", db_url),
        ("LLM_BASE_URL", url.as_str()),
        ("LLM_MAX_RETRIES", "0"),
        ("RUST_LOG", "info"),
    ];
    env.extend_from_slice(extra);
    Server::serve(dir, &env).await
}

/// Creates a conversation, starts a run (202) and returns its id once the run's `start`
/// event has been streamed, i.e. the run is really in flight.
async fn start_run(server: &Server) -> String {
    let (run, seen) = server.watch("take your time", |e| e.event == "start").await;
    assert_eq!(seen.last().map(|e| e.event.as_str()), Some("start"));
    let shown = server.get_json(&format!("/api/runs/{run}")).await;
    assert_eq!(shown["status"], "running");
    run
}

/// A temp dir with a `config.toml` setting a short grace period, and a SQLite URL inside it.
fn workdir() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("config.toml"),
        format!("[server]\nshutdown_grace_s = {GRACE_S}\n"),
    )
    .unwrap();
    let db_url = format!("sqlite://{}", dir.path().join("reagent.db").display());
    (dir, db_url)
}

/// A model that answers long after every test has finished.
async fn slow_llm() -> FakeOpenAi {
    let llm = FakeOpenAi::start().await.unwrap();
    llm.set_default(FakeReply::text("too late").delay(60_000));
    llm
}

/// With `REAGENT_RESUME_ON_RESTART=false` (the behaviour before SPEC §11).
#[tokio::test]
async fn sigterm_cancels_the_active_run_and_exits_cleanly() {
    let (dir, db_url) = workdir();
    let llm = slow_llm().await;
    let off = [("REAGENT_RESUME_ON_RESTART", "false")];
    let mut server = start_with(dir.path(), &db_url, &llm, &off).await;
    let run = start_run(&server).await;

    let sent = Instant::now();
    server.signal("-TERM");
    let status = server.wait().await;
    let took = sent.elapsed();
    assert!(
        status.success(),
        "graceful shutdown should exit 0, got {status}"
    );
    assert!(
        took < Duration::from_secs(GRACE_S + 2),
        "exit took {took:?}, grace is {GRACE_S} s"
    );

    let store = Store::connect(&db_url).await.unwrap();
    let id = uuid::Uuid::parse_str(&run).unwrap();
    let row = store.get_run("", id).await.unwrap().expect("run row");
    assert_eq!(row.status, RunStatus::Cancelled);
    assert!(row.finished_at.is_some());
    let events = store.list_events(id, 0).await.unwrap();
    let seqs: Vec<i64> = events.iter().map(|e| e.seq).collect();
    let expected: Vec<i64> = (1..=events.len() as i64).collect();
    assert_eq!(seqs, expected, "contiguous seq from 1");
    assert_eq!(events.first().unwrap().name, "start");
    let done = events.last().unwrap();
    assert_eq!(done.name, "done");
    let data: Value = serde_json::from_str(&done.data).unwrap();
    assert_eq!(data["status"], "cancelled");
    store.close().await;
}

/// SIGTERM (resume on, the default): the run goes on through the grace period, is then left
/// `running` with its checkpoint, and the next start resumes it to completion (SPEC §11).
#[tokio::test]
async fn sigterm_hands_a_long_run_over_to_the_next_start() {
    let (dir, db_url) = workdir();
    let llm = slow_llm().await;
    let mut server = start(dir.path(), &db_url, &llm).await;
    let run = start_run(&server).await;
    server.signal("-TERM");
    let status = server.wait().await;
    assert!(
        status.success(),
        "graceful shutdown should exit 0, got {status}"
    );
    let store = Store::connect(&db_url).await.unwrap();
    let id = uuid::Uuid::parse_str(&run).unwrap();
    let row = store.get_run("", id).await.unwrap().expect("run row");
    assert_eq!(row.status, RunStatus::Running, "handed over, not ended");
    assert!(store.run_checkpoint(id).await.unwrap().is_some());
    store.close().await;

    llm.set_default(FakeReply::text("in time"));
    let mut again = start(dir.path(), &db_url, &llm).await;
    let r = reqwest::Client::new()
        .get(again.url(&format!("/api/runs/{run}/events")))
        .send()
        .await
        .unwrap();
    let events = read_all(r).await;
    let labels: Vec<String> = events.iter().map(|e| e.label()).collect();
    assert_eq!(
        labels.iter().filter(|l| *l == "step:resumed").count(),
        1,
        "{labels:?}"
    );
    let done = events.last().unwrap();
    assert_eq!(done.data["status"], "completed", "{:?}", done.data);
    let ids: Vec<u64> = events.iter().map(|e| e.id).collect();
    assert_ids_rise_with_one_crash_gap(&ids);
    again.signal("-TERM");
    assert!(again.wait().await.success());
    let store = Store::connect(&db_url).await.unwrap();
    assert_eq!(
        store.run_checkpoint(id).await.unwrap(),
        None,
        "a finished run keeps no checkpoint"
    );
    store.close().await;
}

#[tokio::test]
async fn kill_9_then_restart_fails_the_run_and_replays_it() {
    let (dir, db_url) = workdir();
    let llm = slow_llm().await;
    // Resuming (the default, `crash::resume`) is off: the run fails as it did before SPEC §11.
    let off = [("REAGENT_RESUME_ON_RESTART", "false")];
    let mut server = start_with(dir.path(), &db_url, &llm, &off).await;
    let run = start_run(&server).await;
    server.signal("-KILL");
    let status = server.wait().await;
    assert!(!status.success(), "SIGKILL cannot exit cleanly: {status}");

    let mut again = start_with(dir.path(), &db_url, &llm, &off).await;
    let client = reqwest::Client::new();
    let shown = again.get_json(&format!("/api/runs/{run}")).await;
    assert_eq!(shown["status"], "failed");
    assert_eq!(shown["error"], "interrupted by server restart");
    let r = client
        .get(again.url(&format!("/api/runs/{run}/events")))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let events = read_all(r).await;
    // The recovery tail is numbered above the ids reserved before the kill.
    let ids: Vec<u64> = events.iter().map(|e| e.id).collect();
    assert_ids_rise_with_one_crash_gap(&ids);
    let done = events.last().unwrap();
    assert_eq!(done.event, "done");
    assert_eq!(done.data["status"], "failed");
    assert_eq!(done.data["error"], "interrupted by server restart");

    again.signal("-TERM");
    assert!(again.wait().await.success());
}

/// The server's resident memory, from `/proc`.
fn rss_bytes(server: &Server) -> u64 {
    let pid = server.child.id().expect("child still running");
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS in /proc/PID/status");
    kb * 1024
}

/// The RSS once it has stopped moving (two samples half a second apart within 1 %), bounded.
async fn settled_rss(server: &Server) -> u64 {
    let mut last = rss_bytes(server);
    for _ in 0..40 {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let now = rss_bytes(server);
        if now.abs_diff(last) * 100 <= last {
            return now;
        }
        last = now;
    }
    last
}

/// Clients that connect to a long finished run's events and never read hold a page of the
/// replay each, not the whole log (issue: 40 such clients took 81 MB to 545 MB), and the memory
/// comes back when they go. A measured bound, not a timing.
#[tokio::test]
async fn clients_that_never_read_a_long_replay_hold_little_memory() {
    const CLIENTS: u64 = 20;
    const PER_CLIENT_BOUND: u64 = 1536 * 1024;
    let (dir, db_url) = workdir();
    let llm = FakeOpenAi::start().await.unwrap();
    // ~100,000 answer deltas: a replay of several megabytes, far more than socket buffers hold.
    llm.set_default(FakeReply::text("x".repeat(100_000)).chunk_chars(1));
    let server = start(dir.path(), &db_url, &llm).await;
    let client = reqwest::Client::new();
    let (_, run) = server.start_run("write a lot").await;
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let shown: Value = client
            .get(server.url(&format!("/api/runs/{run}")))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if shown["status"] != "running" {
            assert_eq!(shown["status"], "completed", "{shown}");
            break;
        }
        assert!(Instant::now() < deadline, "the long run did not finish");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let baseline = settled_rss(&server).await;
    let addr = server.base.trim_start_matches("http://").to_string();
    let mut silent = Vec::new();
    for _ in 0..CLIENTS {
        let mut tcp = tokio::net::TcpStream::connect(&addr).await.unwrap();
        let head = format!("GET /api/runs/{run}/events HTTP/1.1\r\nHost: t\r\n\r\n");
        tokio::io::AsyncWriteExt::write_all(&mut tcp, head.as_bytes())
            .await
            .unwrap();
        silent.push(tcp);
    }
    let held = settled_rss(&server).await;
    let per_client = held.saturating_sub(baseline) / CLIENTS;
    eprintln!(
        "RSS baseline {baseline} B, with {CLIENTS} silent clients {held} B: {per_client} B each"
    );
    assert!(
        per_client < PER_CLIENT_BOUND,
        "each non-reading client holds {per_client} bytes"
    );
    drop(silent);
    // The allocator returns freed pages gradually (its decay time): poll, bounded.
    let bound = baseline + CLIENTS * PER_CLIENT_BOUND / 4;
    let mut after = rss_bytes(&server);
    for _ in 0..60 {
        if after <= bound {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        after = rss_bytes(&server);
    }
    eprintln!("RSS after the clients left: {after} B");
    assert!(
        after <= bound,
        "memory not returned: baseline {baseline}, after {after}"
    );
}

/// Polls the child's log until a line satisfies `pred` (the log is read asynchronously).
async fn log_line(server: &Server, pred: impl Fn(&str) -> bool) -> String {
    crate::support::eventually("the log line", || {
        let line = server.log().lines().find(|l| pred(l)).map(str::to_string);
        async move { line }
    })
    .await
}

/// A binary started far from the checkout — an empty working directory, no configuration —
/// serves the UI compiled into it (SPEC §3.4), with content types, ETags and 304s, and its
/// log says where the database and the UI are.
#[tokio::test]
async fn the_ui_is_compiled_into_the_binary_and_served_from_any_directory() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::serve(dir.path(), &[]).await;
    let base = server.base.clone();
    let client = reqwest::Client::new();

    let index = client.get(format!("{base}/")).send().await.unwrap();
    assert_eq!(index.status(), 200);
    let header = |r: &reqwest::Response, name: &str| {
        r.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string()
    };
    assert!(header(&index, "content-type").starts_with("text/html"));
    assert_eq!(header(&index, "cache-control"), "no-cache");
    assert_eq!(
        index.text().await.unwrap(),
        include_str!("../../static/index.html")
    );

    let script = client.get(format!("{base}/app.js")).send().await.unwrap();
    assert_eq!(script.status(), 200);
    assert!(header(&script, "content-type").starts_with("text/javascript"));
    let etag = header(&script, "etag");
    assert!(etag.starts_with('"') && etag.len() > 10, "etag {etag:?}");
    assert_eq!(
        script.text().await.unwrap(),
        include_str!("../../static/app.js")
    );
    let again = client
        .get(format!("{base}/app.js"))
        .header("If-None-Match", &etag)
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 304);

    let icon = client
        .get(format!("{base}/favicon.svg"))
        .send()
        .await
        .unwrap();
    assert_eq!(icon.status(), 200);
    assert!(header(&icon, "content-type").starts_with("image/svg+xml"));
    let missing = client.get(format!("{base}/nope.js")).send().await.unwrap();
    assert_eq!(missing.status(), 404);
    let body: Value = missing.json().await.unwrap();
    assert_eq!(body["error"]["code"], "not_found");

    log_line(&server, |l| l.contains("ui: compiled into the binary")).await;
    let db = dir.path().join("data").join("reagent.db");
    log_line(&server, |l| {
        l.contains(&format!("database: SQLite file {}", db.display()))
    })
    .await;
}

/// `REAGENT_STATIC_DIR` serves a folder instead (UI development), and the log names it.
#[tokio::test]
async fn reagent_static_dir_serves_a_folder_instead() {
    let dir = tempfile::tempdir().unwrap();
    let ui = dir.path().join("ui");
    std::fs::create_dir(&ui).unwrap();
    std::fs::write(ui.join("index.html"), "<p>work in progress</p>").unwrap();
    let ui_dir = ui.display().to_string();
    let server = Server::serve(dir.path(), &[("REAGENT_STATIC_DIR", ui_dir.as_str())]).await;
    let base = server.base.clone();
    let index = reqwest::get(format!("{base}/")).await.unwrap();
    assert_eq!(index.status(), 200);
    assert_eq!(index.text().await.unwrap(), "<p>work in progress</p>");
    let gone = reqwest::get(format!("{base}/app.js")).await.unwrap();
    assert_eq!(gone.status(), 404, "only the folder is served");
    log_line(&server, |l| l.contains(&format!("ui: folder {ui_dir}"))).await;
}

/// Every request leaves an access-log line (method, path, status, latency) and every run one
/// line when it ends (status, iterations, tool calls, tokens, duration), at the default level.
#[tokio::test]
async fn requests_and_finished_runs_are_logged_at_info() {
    let dir = tempfile::tempdir().unwrap();
    let llm = FakeOpenAi::start().await.unwrap();
    llm.set_default(FakeReply::text("logged"));
    let server = Server::serve(
        dir.path(),
        &[
            ("LLM_BASE_URL", llm.base_url().as_str()),
            ("LLM_MAX_RETRIES", "0"),
        ],
    )
    .await;
    let base = server.base.clone();
    let client = reqwest::Client::new();
    let r = client
        .get(format!(
            "{base}/api/runs/00000000-0000-0000-0000-000000000000"
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    let r = client
        .post(format!("{base}/api/chat"))
        .json(&json!({"query": "log me"}))
        .send()
        .await
        .unwrap();
    let events = read_all(r).await;
    assert_eq!(events.last().map(|e| e.event.as_str()), Some("done"));

    let access = log_line(&server, |l| {
        l.contains("GET") && l.contains("/api/runs/00000000-0000-0000-0000-000000000000")
    })
    .await;
    assert!(access.contains("INFO"), "{access}");
    assert!(access.contains("status=404"), "{access}");
    assert!(access.contains("latency="), "{access}");
    let finished = log_line(&server, |l| l.contains("run finished")).await;
    for field in [
        "status=completed",
        "iterations=1",
        "tool_calls=0",
        "total_tokens=",
        "elapsed_ms=",
        "run_id=",
    ] {
        assert!(finished.contains(field), "{field} missing in {finished}");
    }
}
