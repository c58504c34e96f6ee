//! A storm of reconnects with `Last-Event-ID` at random points resumes exactly after the id.

use super::*;

/// Reads frames from `response` until `n` events arrived or the stream ended.
async fn read_n(response: reqwest::Response, n: usize) -> Vec<Sse> {
    let mut body = response.bytes_stream();
    let (mut buf, mut out, mut comments) = (String::new(), Vec::new(), 0);
    let mut pending = Vec::new();
    while out.len() < n {
        match tokio::time::timeout(Duration::from_secs(20), body.next()).await {
            Ok(Some(chunk)) => {
                push_utf8(&mut pending, &mut buf, &chunk.unwrap());
                parse_frames(&mut buf, &mut out, &mut comments);
            }
            Ok(None) => break,
            Err(_) => panic!("a resumed stream stalled"),
        }
    }
    out.truncate(n);
    out
}

#[tokio::test]
async fn reconnect_storm_with_last_event_id_resumes_exactly_after_the_id() {
    let app = TestApp::spawn().await;
    // A long run: 30 echo steps, a pause at the gate halfway (so clients reconnect both to the
    // replayed past and to the live tail), then a streamed answer.
    for i in 0..15 {
        app.llm.tool_calls(&[(
            &format!("a{i}") as &str,
            "echo",
            &format!("{{\"text\":\"{i}\"}}") as &str,
        )]);
    }
    app.llm.tool_calls(&[("g", "gate", "{}")]);
    for i in 15..30 {
        app.llm.tool_calls(&[(
            &format!("a{i}") as &str,
            "echo",
            &format!("{{\"text\":\"{i}\"}}") as &str,
        )]);
    }
    // Spare replies: the engine may spend extra calls (completion checks) on a long run.
    for _ in 0..5 {
        app.llm.text("enough");
    }
    let conv = app.create_conversation(None).await;
    let run = app
        .start_run(&conv, json!({"query": "storm", "max_iterations": 60}), None)
        .await;
    app.wait_for(&run, |e| {
        e.label() == "step:tool_start" && e.data["tool"] == "gate"
    })
    .await;

    let clients = 40;
    let mut tasks = Vec::new();
    for c in 0..clients {
        let url = app.url(&format!("/api/runs/{run}/events"));
        let client = app.client.clone();
        tasks.push(tokio::spawn(async move {
            let mut rng = rand::rngs::StdRng::seed_from_u64(c);
            // Start anywhere in what exists so far (the first ~48 events), even at 0.
            let mut last: u64 = rng.random_range(0..40);
            let mut seen: Vec<Sse> = Vec::new();
            let mut reconnects = 0;
            loop {
                let mut rb = client.get(&url);
                // Alternate the two documented ways of resuming.
                rb = if reconnects % 2 == 0 {
                    rb.header("Last-Event-ID", last.to_string())
                } else {
                    rb.query(&[("after", last)])
                };
                let r = rb.send().await.unwrap();
                assert_eq!(r.status(), 200);
                let want = rng.random_range(1..6);
                let got = read_n(r, want).await;
                for (k, e) in got.iter().enumerate() {
                    assert_eq!(
                        e.id,
                        last + 1 + k as u64,
                        "client {c}: resumed after {last} but got id {}",
                        e.id
                    );
                }
                if let Some(e) = got.last() {
                    last = e.id;
                }
                let finished = got.iter().any(|e| e.event == "done");
                seen.extend(got);
                reconnects += 1;
                if finished {
                    return (seen, reconnects);
                }
            }
        }));
        if c == clients / 2 {
            // Half the clients connected before the gate opens, half after.
            app.gate.release();
        }
    }
    let results = futures::future::join_all(tasks).await;
    let replay = app.events(&run, None).await;
    assert_eq!(
        replay.last().unwrap().data["status"],
        "completed",
        "{}",
        replay.last().unwrap().data
    );
    let mut total_reconnects = 0;
    for (c, result) in results.into_iter().enumerate() {
        let (seen, reconnects) = result.unwrap();
        total_reconnects += reconnects;
        let first = seen.first().unwrap().id as usize;
        // Each client's concatenated reads are exactly the replay from where it began.
        assert_eq!(seen[..], replay[first - 1..], "client {c}");
    }
    assert!(total_reconnects > 200, "only {total_reconnects} reconnects");
    eventually("gauge back to 0", || ready(subscribers(&app) == 0.0)).await;
}
