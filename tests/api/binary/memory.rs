//! Memory: clients that never read a long replay hold little of it; a provider's huge error
//! body is never read.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::http::StatusCode;
use axum::routing::post;
use axum::Router;
use futures::StreamExt;

use super::*;

/// The RSS once it has stopped moving (two samples half a second apart within 1 %), bounded.
async fn settled_rss(server: &Server) -> u64 {
    let mut last = server.status_bytes("VmRSS");
    for _ in 0..40 {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let now = server.status_bytes("VmRSS");
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
    let mut after = server.status_bytes("VmRSS");
    for _ in 0..60 {
        if after <= bound {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        after = server.status_bytes("VmRSS");
    }
    eprintln!("RSS after the clients left: {after} B");
    assert!(
        after <= bound,
        "memory not returned: baseline {baseline}, after {after}"
    );
}

/// A provider whose every answer is HTTP 500 with a 200 MB body, made as it is sent (the fake
/// never holds it); counts the bytes it managed to send.
async fn huge_error_provider() -> (String, Arc<AtomicU64>) {
    const CHUNK: usize = 64 * 1024;
    const CHUNKS: usize = 200 * 1024 * 1024 / CHUNK;
    let sent = Arc::new(AtomicU64::new(0));
    let counter = sent.clone();
    let provider = Router::new().route(
        "/v1/chat/completions",
        post(move || {
            let counter = counter.clone();
            async move {
                let chunk = Bytes::from(vec![b'e'; CHUNK]);
                let body = futures::stream::iter(0..CHUNKS).map(move |_| {
                    counter.fetch_add(CHUNK as u64, Ordering::Relaxed);
                    Ok::<_, std::io::Error>(chunk.clone())
                });
                (StatusCode::INTERNAL_SERVER_ERROR, Body::from_stream(body))
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, provider).await });
    (format!("http://{addr}/v1"), sent)
}

/// A provider's 200 MB error body is not read (issue 37: RSS 23 MB -> 630 MB per call, again
/// on every retry): three attempts (two retries) leave the peak RSS of the real binary less
/// than 20 MB above where it was, the run fails at once with a short message, and the fake
/// could push only what socket buffers hold of each body.
#[tokio::test]
async fn a_huge_provider_error_body_is_not_read() {
    const PEAK_GROWTH_BOUND: u64 = 20 * 1024 * 1024;
    let (dir, db_url) = workdir();
    let (url, sent) = huge_error_provider().await;
    let env = [
        ("DATABASE_URL", db_url.as_str()),
        ("LLM_BASE_URL", url.as_str()),
        ("LLM_MAX_RETRIES", "2"),
        ("LLM_TIMEOUT_S", "60"),
        ("RUST_LOG", "info"),
    ];
    let server = Server::serve(dir.path(), &env).await;
    let before = server.status_bytes("VmHWM");
    let started = Instant::now();
    let (_, run) = server.start_run("hello").await;
    let shown = loop {
        let shown = server.get_json(&format!("/api/runs/{run}")).await;
        if shown["status"] != "running" && shown["status"] != "queued" {
            break shown;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the run did not end: {shown}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let after = server.status_bytes("VmHWM");
    let pushed = sent.load(Ordering::Relaxed);
    eprintln!(
        "peak RSS {before} B -> {after} B (+{} B) in {:?}; the provider pushed {pushed} B",
        after.saturating_sub(before),
        started.elapsed()
    );
    assert_eq!(shown["status"], "failed", "{shown}");
    let error = shown["error"].as_str().unwrap_or_default();
    assert!(error.contains("500") && error.len() < 1000, "{error}");
    assert!(
        after.saturating_sub(before) < PEAK_GROWTH_BOUND,
        "peak RSS grew from {before} to {after} bytes"
    );
    assert!(
        pushed < 3 * 32 * 1024 * 1024,
        "{pushed} bytes of error bodies were downloaded"
    );
}
