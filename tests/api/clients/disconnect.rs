//! Disconnecting at any phase (before the first event, during the steps, during the answer)
//! leaves the run complete and the subscribers gauge at 0.

use super::*;

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
        hang_up_after(&app, phase, after).await;
    }
    let conv = hang_up_before_any_byte(&app).await;
    let follow_up = follow_up_run(&app, &conv).await;
    assert_completed_and_persisted(&app, &follow_up).await;
    every_run_is_complete(&app, &conv).await;
    eventually("gauge back to 0 after the raw hang-up", || {
        ready(subscribers(&app) == 0.0)
    })
    .await;
    eventually("no active run left", || {
        ready(app.app.state.runs.active_runs() == 0)
    })
    .await;
}

/// Streams a run, hangs up after the event `after` (or before reading anything), and checks
/// the run completed anyway.
async fn hang_up_after(app: &TestApp, phase: &str, after: Option<&str>) {
    script_run(app);
    let conv = app.create_conversation(None).await;
    let seen = read_then_hang_up(app, &conv, phase, after).await;
    let run = app
        .get(&format!("/api/conversations/{conv}"), None)
        .await
        .json::<Value>()
        .await
        .unwrap()["messages"][0]["run_id"]
        .as_str()
        .unwrap()
        .to_string();
    let replay = assert_completed_and_persisted(app, &run).await;
    // What the client saw before hanging up is a prefix of what was stored.
    assert_eq!(seen[..], replay[..seen.len()], "{phase}");
    let answer = replay.iter().find(|e| e.label() == "answer:done").unwrap();
    assert!(answer.data["content"]
        .as_str()
        .unwrap()
        .ends_with("part 399 "));
    eventually(&format!("{phase}: gauge back to 0"), || {
        ready(subscribers(app) == 0.0)
    })
    .await;
}

/// Starts a streamed run on `conv` and reads it up to the event `after`; what it saw.
async fn read_then_hang_up(
    app: &TestApp,
    conv: &str,
    phase: &str,
    after: Option<&str>,
) -> Vec<Sse> {
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
    seen
}

/// The raw version of "before start": the request is sent and the socket closed at once,
/// before any response byte; the conversation it named.
async fn hang_up_before_any_byte(app: &TestApp) -> String {
    script_run(app);
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
    conv
}

/// A run started on `conv` after the hang-up, retried while the first is still active.
async fn follow_up_run(app: &TestApp, conv: &str) -> String {
    // The hung-up request may or may not have been accepted. Give it a moment to show up,
    // then start a follow-up run on the same conversation (retrying while the first is still
    // active): afterwards every run of the conversation must be complete and persisted.
    let shown = eventually("the hung-up request's run shows up", || async move {
        let detail: Value = app
            .get_json(&format!("/api/conversations/{conv}"), None)
            .await;
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
    match tokio::time::timeout(Duration::from_secs(30), start).await {
        Ok(follow_up) => follow_up,
        Err(_) => stuck(app, conv).await,
    }
}

/// Fails with what the busy conversation and its active run hold.
async fn stuck(app: &TestApp, conv: &str) -> ! {
    let detail: Value = app
        .get_json(&format!("/api/conversations/{conv}"), None)
        .await;
    let active = detail["active_run_id"].as_str().map(str::to_string);
    let run = match &active {
        Some(id) => run_status(app, id).await,
        None => Value::Null,
    };
    panic!(
        "the conversation stayed busy: {detail}\nrun: {run}\nactive runs: {}",
        app.app.state.runs.active_runs()
    );
}

/// Either no run was accepted for the hung-up request, or it completed and was persisted.
async fn every_run_is_complete(app: &TestApp, conv: &str) {
    let detail: Value = app
        .get_json(&format!("/api/conversations/{conv}"), None)
        .await;
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
}
