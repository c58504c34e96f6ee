//! A run's stream, stored log, reconnect, cancel, restart replay and keep-alive.

use super::*;

on_both_backends!(
    native_run_streams_events_in_order_and_is_stored,
    json_run_via_chat_creates_the_conversation,
    reconnect_with_last_event_id_gets_the_rest_exactly_once,
    cancel_during_a_slow_tool_ends_cancelled,
    restart_replays_old_runs_and_fails_the_killed_one,
);

/// The events of a run that calls one tool, then answers; a `thinking` step comes first only
/// when the model wrote something before its call.
const ONE_TOOL_CALL: [&str; 7] = [
    "start",
    "step:tool_start",
    "step:tool_end",
    "answer:start",
    "answer:delta",
    "answer:done",
    "done",
];

async fn native_run_streams_events_in_order_and_is_stored(db: String) {
    let app = TestApp::spawn_on(&db).await;
    app.llm.tool_calls(&[("c1", "echo", r#"{"text":"hi"}"#)]);
    app.llm.text("all done");
    let conv = app.create_conversation(None).await;
    let r = app
        .client
        .post(app.url(&format!("/api/conversations/{conv}/runs")))
        .header("Accept", "text/event-stream")
        .json(&json!({"query": "say hi"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["cache-control"], "no-cache");
    assert_eq!(r.headers()["x-accel-buffering"], "no");
    let events = read_all(r).await;
    assert_sequential(&events);
    assert_eq!(labels(&events), ONE_TOOL_CALL);
    assert_eq!(events[0].data["mode"], "native");
    assert_eq!(events[0].data["conversation_id"], conv.as_str());
    assert_eq!(events[2].data["observation"], r#"echo: {"text":"hi"}"#);
    let done = &events.last().unwrap().data;
    assert_eq!(done["status"], "completed");
    assert_eq!(done["tool_calls"], 1);
    assert_eq!(done["answer"], "Scripted answer.");
    let run_id = events[0].data["run_id"].as_str().unwrap();

    let run: Value = app.get_json(&format!("/api/runs/{run_id}"), None).await;
    assert_eq!(run["status"], "completed");
    assert_eq!(run["tool_calls"], 1);
    let detail: Value = app
        .get_json(&format!("/api/conversations/{conv}"), None)
        .await;
    let messages: Vec<(String, String)> = detail["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["kind"].as_str().unwrap().to_string(),
                m["content"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        messages,
        [
            ("query".to_string(), "say hi".to_string()),
            ("answer".to_string(), "Scripted answer.".to_string())
        ]
    );
    // A finished run replays in full from the database.
    let replay = app.events(run_id, None).await;
    assert_eq!(replay, events);
}

async fn json_run_via_chat_creates_the_conversation(db: String) {
    let app = TestApp::with(Options {
        db_url: Some(db.clone()),
        llm: ScriptedLlm::json(),
        ..Options::default()
    })
    .await;
    app.llm.text(
        r#"{"reasoning":"use echo","type":"tool_call","tool_name":"echo","tool_args":{"text":"x"}}"#,
    );
    app.llm
        .text(r#"{"reasoning":"enough","type":"final_answer","answer":"x"}"#);
    let r = app
        .post(
            "/api/chat",
            json!({"query": "echo x", "mode": "json"}),
            None,
        )
        .await;
    assert_eq!(r.status(), 200);
    let events = read_all(r).await;
    assert_sequential(&events);
    let mut expected = ONE_TOOL_CALL.to_vec();
    expected.insert(1, "step:thinking");
    assert_eq!(labels(&events), expected);
    assert_eq!(events[0].data["mode"], "json");
    assert_eq!(events[1].data["reasoning"], "use echo");
    let conv = events[0].data["conversation_id"].as_str().unwrap();
    let r = app.get(&format!("/api/conversations/{conv}"), None).await;
    assert_eq!(r.status(), 200);
}

async fn reconnect_with_last_event_id_gets_the_rest_exactly_once(db: String) {
    let app = TestApp::spawn_on(&db).await;
    app.llm.tool_calls(&[("c1", "gate", "{}")]);
    app.llm.text("fine");
    let conv = app.create_conversation(None).await;
    let run = app.start_run(&conv, json!({"query": "q"}), None).await;
    // First client: reads `start` (and what shared its chunk: a burst is written at once),
    // then disconnects and resumes after the last event it read.
    let first = app.wait_for(&run, |e| e.event == "start").await;
    assert_eq!(first[0].event, "start");
    let last_id = first.last().unwrap().id;
    app.gate.release();
    let rest = app.events(&run, Some(last_id)).await;
    assert_eq!(rest.first().unwrap().id, last_id + 1);
    for pair in rest.windows(2) {
        assert_eq!(pair[1].id, pair[0].id + 1, "no gap, no duplicate");
    }
    let all = app.events(&run, None).await;
    assert_eq!([first, rest].concat(), all);
    assert_eq!(all.last().unwrap().data["status"], "completed");
    // `?after=N` works like the header.
    let r = app
        .get(
            &format!("/api/runs/{run}/events?after={}", all.len() - 1),
            None,
        )
        .await;
    let tail = read_all(r).await;
    assert_eq!(tail.len(), 1);
    assert_eq!(tail[0].event, "done");
    // Spaces around the number are accepted in the query as in the header.
    let path = format!("/api/runs/{run}/events?after=%20{}%20", all.len() - 1);
    let spaced = read_all(app.get(&path, None).await).await;
    assert_eq!(spaced, tail);
    // An id past every possible id (2^63 and above, up to 2^64 - 1) replays nothing; it
    // must not wrap around to the start of the log.
    for after in ["9223372036854775808", "18446744073709551615"] {
        let r = app
            .get(&format!("/api/runs/{run}/events?after={after}"), None)
            .await;
        assert_eq!(r.status(), 200);
        assert_eq!(read_all(r).await, vec![], "?after={after}");
        let r = app
            .client
            .get(app.url(&format!("/api/runs/{run}/events")))
            .header("Last-Event-ID", after)
            .send()
            .await
            .unwrap();
        assert_eq!(read_all(r).await, vec![], "Last-Event-ID: {after}");
    }
}

async fn cancel_during_a_slow_tool_ends_cancelled(db: String) {
    let app = TestApp::spawn_on(&db).await;
    app.llm.tool_calls(&[("c1", "gate", "{}")]);
    let conv = app.create_conversation(None).await;
    let run = app.start_run(&conv, json!({"query": "q"}), None).await;
    app.wait_for(&run, |e| e.label() == "step:tool_start").await;
    // Mid-run, the run shows its counters so far (they were 0 until the end).
    let live: Value = app.get_json(&format!("/api/runs/{run}"), None).await;
    assert_eq!(live["status"], "running");
    assert_eq!(
        (live["iterations"].as_u64(), live["tool_calls"].as_u64()),
        (Some(1), Some(1)),
        "{live}"
    );
    // A second run on the busy conversation is refused.
    let r = app
        .post(
            &format!("/api/conversations/{conv}/runs"),
            json!({"query": "again"}),
            None,
        )
        .await;
    assert_eq!(error_code(r, 409).await, "run_active");
    assert_eq!(app.cancel(&run).await.status(), 202);
    let events = app.events(&run, None).await;
    let done = events.last().unwrap();
    assert_eq!(done.event, "done");
    assert_eq!(done.data["status"], "cancelled");
    let stored: Value = app.get_json(&format!("/api/runs/{run}"), None).await;
    assert_eq!(stored["status"], "cancelled");
    // Cancelling a finished run is a conflict.
    assert_eq!(error_code(app.cancel(&run).await, 409).await, "conflict");
}

async fn restart_replays_old_runs_and_fails_the_killed_one(db: String) {
    let app = TestApp::spawn_on(&db).await;
    app.llm.text("ok");
    let conv = app.create_conversation(None).await;
    let done_run = app.start_run(&conv, json!({"query": "q"}), None).await;
    let before = app.events(&done_run, None).await;
    // A run the previous process was in the middle of.
    let store = app.app.state.store.clone();
    let c = store
        .create_conversation("", NewConversation::default())
        .await
        .unwrap();
    let killed = uuid::Uuid::new_v4();
    store
        .create_run(NewRun {
            id: killed,
            conversation_id: c.id,
            owner: String::new(),
            mode: Mode::Native,
            model: "scripted".into(),
            traceparent: None,
        })
        .await
        .unwrap();
    let start =
        json!({"run_id": killed, "conversation_id": c.id, "model": "scripted", "mode": "native"});
    store
        .append_events(
            killed,
            &[StoredEvent {
                seq: 1,
                name: "start".into(),
                data: start.to_string(),
            }],
        )
        .await
        .unwrap();
    // Its process is gone and its lease lapsed (created through this store, the run is leased
    // to this instance; the next one has another name and takes only lapsed leases).
    let me = app.app.state.runs.settings().instance_id.clone();
    store.release_leases(&me, &[(killed, 1)]).await.unwrap();
    let db_url = app.db_url.clone();
    let dir = app.stop().await;

    let app2 = TestApp::with(Options {
        db_url: Some(db_url),
        ..Options::default()
    })
    .await;
    assert_eq!(app2.events(&done_run, None).await, before);
    let run: Value = app2.get_json(&format!("/api/runs/{killed}"), None).await;
    assert_eq!(run["status"], RunStatus::Failed.as_str());
    assert_eq!(run["error"], "interrupted by server restart");
    let events = app2.events(&killed.to_string(), None).await;
    // `start` as stored, then the recovery tail above the run's reserved ids.
    let ids: Vec<u64> = events.iter().map(|e| e.id).collect();
    assert_eq!(ids[..2], [1, 1 + EVENT_ID_BLOCK as u64], "{ids:?}");
    assert_ids_rise_with_one_crash_gap(&ids);
    assert_eq!(events.first().unwrap().event, "start");
    assert_eq!(events.last().unwrap().data["status"], "failed");
    drop(dir);
}

#[tokio::test]
async fn keep_alive_comment_on_a_quiet_stream_and_unknown_approval() {
    let app = TestApp::with(Options {
        keep_alive: Duration::from_millis(50),
        ..Options::default()
    })
    .await;
    app.llm.tool_calls(&[("c1", "gate", "{}")]);
    app.llm.text("ok");
    let conv = app.create_conversation(None).await;
    let run = app.start_run(&conv, json!({"query": "q"}), None).await;
    // The run waits on the gate: after its first events the stream is quiet, so a keep-alive
    // comment must arrive.
    let r = app.events_response(&run, None).await;
    let mut body = r.bytes_stream();
    let mut text = String::new();
    let read = async {
        while !text.contains("\n: keep-alive\n") {
            let chunk = body.next().await.unwrap().unwrap();
            text.push_str(std::str::from_utf8(&chunk).unwrap());
        }
    };
    tokio::time::timeout(Duration::from_secs(10), read)
        .await
        .expect("no keep-alive comment");
    drop(body);
    app.gate.release();
    let events = app.events(&run, None).await;
    assert_eq!(events.last().unwrap().data["status"], "completed");
    let r = app
        .post(
            &format!("/api/approvals/{}", uuid::Uuid::new_v4()),
            json!({"approve": true}),
            None,
        )
        .await;
    assert_eq!(error_code(r, 404).await, "not_found");
    let pending: Value = app.get_json("/api/approvals", None).await;
    assert_eq!(pending, json!([]));
}
