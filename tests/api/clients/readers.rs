//! Readers that never read and a thousand idle subscribers: they block nothing, and each gets
//! every event in order.

use super::*;

/// Sends a GET for the run's events on a raw socket and never reads.
async fn never_reading_client(app: &TestApp, run: &str) -> tokio::net::TcpStream {
    let mut stream = tokio::net::TcpStream::connect(app.addr).await.unwrap();
    let request = format!(
        "GET /api/runs/{run}/events HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\
         Connection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    stream
}

#[tokio::test]
async fn a_reader_that_never_reads_blocks_nothing_and_later_gets_everything() {
    let app = TestApp::spawn().await;
    // The run waits at the gate, then streams an answer of 20 000 deltas (~5 MB of frames,
    // twice that with `answer done` and `done`): far more than the socket buffers hold, so the
    // stuck readers' connections fill up long before the run ends.
    app.llm.tool_calls(&[("g", "gate", "{}")]);
    app.llm.text("enough");
    let delta = "y".repeat(200);
    app.llm.push_stream(Turn::Stream(vec![delta; 20_000], None));
    let conv = app.create_conversation(None).await;
    let run = app.start_run(&conv, json!({"query": "big"}), None).await;
    app.wait_for(&run, |e| e.label() == "step:tool_start").await;
    let mut stuck = Vec::new();
    for _ in 0..3 {
        stuck.push(never_reading_client(&app, &run).await);
    }
    eventually("stuck readers subscribed", || {
        ready(subscribers(&app) >= 3.0)
    })
    .await;
    // The run finishes although nobody reads those connections, and a normal subscriber gets
    // everything meanwhile.
    app.gate.release();
    let replay = assert_completed_and_persisted(&app, &run).await;
    assert!(replay.len() > 20_000);
    assert_eq!(app.app.state.runs.active_runs(), 0);
    eventually("only the stuck readers remain", || {
        ready(subscribers(&app) == 3.0)
    })
    .await;
    // Now the stuck readers read: every event, in order, then the stream closes.
    for mut stream in stuck {
        let mut raw = Vec::new();
        tokio::time::timeout(Duration::from_secs(30), stream.read_to_end(&mut raw))
            .await
            .expect("the late reader never got the end")
            .unwrap();
        let text = String::from_utf8_lossy(&raw);
        let (_, body) = text.split_once("\r\n\r\n").unwrap();
        let body = dechunk(body);
        let mut buf = body.clone();
        let (mut events, mut comments) = (Vec::new(), 0);
        parse_frames(&mut buf, &mut events, &mut comments);
        assert_eq!(events, replay, "the late reader's stream");
    }
    eventually("gauge back to 0", || ready(subscribers(&app) == 0.0)).await;
}

/// Decodes an HTTP/1.1 chunked body.
fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    loop {
        let Some((size, rest)) = body.split_once("\r\n") else {
            return out;
        };
        let size = usize::from_str_radix(size.trim(), 16).unwrap();
        if size == 0 {
            return out;
        }
        out.push_str(&rest[..size]);
        body = &rest[size + 2..];
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_idle_subscribers_all_get_every_event() {
    const N: usize = 1000;
    let app = TestApp::spawn().await;
    app.llm.tool_calls(&[("g", "gate", "{}")]);
    app.llm.text("enough");
    let conv = app.create_conversation(None).await;
    let run = app.start_run(&conv, json!({"query": "long"}), None).await;
    app.wait_for(&run, |e| e.label() == "step:tool_start").await;
    // Each subscriber on its own connection; responses are held unread (idle) until the run
    // moves on.
    let mut responses = Vec::with_capacity(N);
    for batch in 0..N / 100 {
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(0)
            .build()
            .unwrap();
        let mut pending = Vec::new();
        for _ in 0..100 {
            let rb = client.get(app.url(&format!("/api/runs/{run}/events")));
            pending.push(async move { rb.send().await.unwrap() });
        }
        for r in futures::future::join_all(pending).await {
            assert_eq!(r.status(), 200, "batch {batch}");
            responses.push(r);
        }
    }
    eventually("1000 subscribers counted", || {
        ready(subscribers(&app) == N as f64)
    })
    .await;
    // The server still answers other requests promptly enough for a health check.
    for _ in 0..5 {
        let r = tokio::time::timeout(Duration::from_secs(10), app.get("/healthz", None))
            .await
            .expect("/healthz hung with 1000 subscribers");
        assert_eq!(r.status(), 200);
    }
    let readers: Vec<_> = responses
        .into_iter()
        .map(|r| tokio::spawn(read_all(r)))
        .collect();
    app.gate.release();
    let replay = app.events(&run, None).await;
    assert_eq!(replay.last().unwrap().data["status"], "completed");
    for (i, reader) in readers.into_iter().enumerate() {
        let events = reader.await.unwrap();
        assert_eq!(events, replay, "subscriber {i}");
    }
    eventually("gauge back to 0", || ready(subscribers(&app) == 0.0)).await;
}
