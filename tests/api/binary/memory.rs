//! Memory: clients that never read a long replay hold little of it.

use super::*;

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
