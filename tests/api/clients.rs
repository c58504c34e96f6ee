//! Hostile and unlucky SSE clients (SPEC §4): a run belongs to the run manager, and a client
//! only holds a cursor into its event log, so
//! - disconnecting at any phase (before the first event, during the steps, during the answer)
//!   never stops, loses or corrupts the run, and the `reagent_sse_subscribers` gauge returns to 0;
//! - a storm of reconnects with `Last-Event-ID` at random points resumes exactly after the
//!   given id every time;
//! - a reader that never reads blocks neither the run nor other subscribers, and when it
//!   finally reads it gets every event in order (it was a cursor, not a growing queue);
//! - 1 000 idle subscribers of one long run all get every event, `/healthz` keeps answering and
//!   the gauge counts them exactly.
//!
//! Nothing here asserts on timing: "eventually" waits poll a condition under a generous
//! deadline, and the run's progress is gated by the test (`gate` tool), not by sleeps.

use std::future::ready;
use std::time::Duration;

use futures::StreamExt;
use rand::{Rng, SeedableRng};
use reagent::testing::scripted::Turn;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use uuid::Uuid;

use crate::support::app::{error_code, TestApp};
use crate::support::eventually;
use crate::support::sse::{parse_frames, push_utf8, read_all, Sse};

/// The `reagent_sse_subscribers` gauge.
fn subscribers(app: &TestApp) -> f64 {
    let text = app
        .app
        .state
        .metrics
        .render(app.app.state.runs.active_runs());
    text.lines()
        .find_map(|l| l.strip_prefix("reagent_sse_subscribers "))
        .map(|v| v.trim().parse().unwrap())
        .unwrap_or(0.0)
}

async fn run_status(app: &TestApp, run: &str) -> Value {
    app.get(&format!("/api/runs/{run}"), None)
        .await
        .json()
        .await
        .unwrap()
}

/// Waits for the run to finish, then checks what was persisted: a terminal status, events 1..n
/// contiguous in the database ending with `done`, identical to a fresh replay.
async fn assert_completed_and_persisted(app: &TestApp, run: &str) -> Vec<Sse> {
    // A replay of a finished run closes after `done`; of a live one, it follows until `done`.
    let replay = app.events(run, None).await;
    assert_eq!(
        replay.last().unwrap().event,
        "done",
        "run {run} did not end with done"
    );
    assert_eq!(replay.last().unwrap().data["status"], "completed");
    for (i, e) in replay.iter().enumerate() {
        assert_eq!(e.id, i as u64 + 1, "replay ids of {run}");
    }
    let id = Uuid::parse_str(run).unwrap();
    let replayed = replay.len();
    let stored = eventually(
        &format!("run {run} completed and persisted"),
        || async move {
            let stored = app.app.state.store.list_events(id, 0).await.unwrap();
            let status = run_status(app, run).await;
            (status["status"] == "completed" && stored.len() == replayed).then_some(stored)
        },
    )
    .await;
    assert_eq!(run_status(app, run).await["status"], "completed");
    assert_eq!(stored.len(), replay.len(), "events persisted for {run}");
    for (i, (s, r)) in stored.iter().zip(&replay).enumerate() {
        assert_eq!(s.seq, i as i64 + 1);
        assert_eq!(s.name, r.event);
        assert_eq!(serde_json::from_str::<Value>(&s.data).unwrap(), r.data);
    }
    replay
}

/// Script: two echo steps, then a streamed answer of many deltas.
fn script_run(app: &TestApp) {
    app.llm.tool_calls(&[("c1", "echo", r#"{"text":"one"}"#)]);
    app.llm.tool_calls(&[("c2", "echo", r#"{"text":"two"}"#)]);
    app.llm.text("enough");
    let deltas: Vec<String> = (0..400).map(|i| format!("part {i} ")).collect();
    app.llm.push_stream(Turn::Stream(deltas, None));
}

#[tokio::test]
async fn disconnecting_at_any_phase_leaves_the_run_complete_and_the_gauge_at_zero() {
    let app = TestApp::spawn().await;
    // (phase, the event after which the client hangs up; None = before reading anything)
    let phases: [(&str, Option<&str>); 4] = [
        ("before start", None),
        ("after start", Some("start")),
        ("mid-steps", Some("step:tool_end")),
        ("mid-answer", Some("answer:delta")),
    ];
    for (phase, after) in phases {
        script_run(&app);
        let conv = app.create_conversation(None).await;
        let r = app
            .client
            .post(app.url(&format!("/api/conversations/{conv}/runs")))
            .header("Accept", "text/event-stream")
            .json(&json!({"query": phase}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200, "{phase}");
        let mut body = r.bytes_stream();
        let (mut buf, mut pending) = (String::new(), Vec::new());
        let mut seen = Vec::new();
        if let Some(stop) = after {
            let mut comments = 0;
            while !seen.iter().any(|e: &Sse| e.label() == stop) {
                let chunk = body.next().await.expect("stream ended early").unwrap();
                push_utf8(&mut pending, &mut buf, &chunk);
                parse_frames(&mut buf, &mut seen, &mut comments);
            }
        }
        drop(body);
        let run = app
            .get(&format!("/api/conversations/{conv}"), None)
            .await
            .json::<Value>()
            .await
            .unwrap()["messages"][0]["run_id"]
            .as_str()
            .unwrap()
            .to_string();
        let replay = assert_completed_and_persisted(&app, &run).await;
        // What the client saw before hanging up is a prefix of what was stored.
        assert_eq!(seen[..], replay[..seen.len()], "{phase}");
        let answer = replay.iter().find(|e| e.label() == "answer:done").unwrap();
        assert!(answer.data["content"]
            .as_str()
            .unwrap()
            .ends_with("part 399 "));
        eventually(&format!("{phase}: gauge back to 0"), || {
            ready(subscribers(&app) == 0.0)
        })
        .await;
    }
    // The raw version of "before start": the request is sent and the socket closed at once,
    // before any response byte. Either no run was accepted, or it completed and was persisted.
    script_run(&app);
    let conv = app.create_conversation(None).await;
    let body = json!({"query": "gone", "conversation_id": conv}).to_string();
    let mut stream = tokio::net::TcpStream::connect(app.addr).await.unwrap();
    let request = format!(
        "POST /api/chat HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
         Accept: text/event-stream\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    drop(stream);
    // The hung-up request may or may not have been accepted. Give it a moment to show up,
    // then start a follow-up run on the same conversation (retrying while the first is still
    // active): afterwards every run of the conversation must be complete and persisted.
    let (app, conv) = (&app, conv.as_str());
    let shown = eventually("the hung-up request's run shows up", || async move {
        let detail: Value = app
            .get(&format!("/api/conversations/{conv}"), None)
            .await
            .json()
            .await
            .unwrap();
        !detail["messages"].as_array().unwrap().is_empty()
    });
    // Not shown within a moment: it was not accepted, which is allowed.
    let _ = tokio::time::timeout(Duration::from_secs(5), shown).await;
    script_run(app);
    let start = eventually("a follow-up run accepted", || async move {
        let r = app
            .post(
                &format!("/api/conversations/{conv}/runs"),
                json!({"query": "after the hang-up"}),
                None,
            )
            .await;
        if r.status() != 202 {
            assert_eq!(error_code(r, 409).await, "run_active");
            return None;
        }
        let body = r.json::<Value>().await.unwrap();
        Some(body["run_id"].as_str().unwrap().to_string())
    });
    // A bounded wait, so a stuck conversation is reported with what it holds.
    let Ok(follow_up) = tokio::time::timeout(Duration::from_secs(30), start).await else {
        let detail: Value = app
            .get(&format!("/api/conversations/{conv}"), None)
            .await
            .json()
            .await
            .unwrap();
        let active = detail["active_run_id"].as_str().map(str::to_string);
        let run = match &active {
            Some(id) => run_status(app, id).await,
            None => Value::Null,
        };
        panic!(
            "the conversation stayed busy: {detail}\nrun: {run}\nactive runs: {}",
            app.app.state.runs.active_runs()
        );
    };
    assert_completed_and_persisted(app, &follow_up).await;
    let detail: Value = app
        .get(&format!("/api/conversations/{conv}"), None)
        .await
        .json()
        .await
        .unwrap();
    let messages = detail["messages"].as_array().unwrap();
    let runs: std::collections::BTreeSet<&str> = messages
        .iter()
        .map(|m| m["run_id"].as_str().unwrap())
        .collect();
    assert!(runs.len() == 1 || runs.len() == 2, "{detail}");
    for run in &runs {
        assert_completed_and_persisted(app, run).await;
        let kinds: Vec<&str> = messages
            .iter()
            .filter(|m| m["run_id"] == *run)
            .map(|m| m["kind"].as_str().unwrap())
            .collect();
        assert_eq!(kinds, ["query", "answer"], "run {run}");
    }
    eventually("gauge back to 0 after the raw hang-up", || {
        ready(subscribers(app) == 0.0)
    })
    .await;
    eventually("no active run left", || {
        ready(app.app.state.runs.active_runs() == 0)
    })
    .await;
}

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
