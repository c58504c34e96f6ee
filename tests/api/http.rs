//! Black-box tests of the HTTP API (SPEC §3, §4) through the real router on 127.0.0.1:0, a
//! scripted model. See `tests/support/app.rs` for the `TestApp` helper.
//!
//! The scenarios that touch storage are plain `async fn(db_url)`s, run once per backend by
//! [`on_both_backends!`]: `sqlite::<name>` on a temp file and `postgres::<name>` on a fresh
//! PostgreSQL database (CI's 127.0.0.1:5432; `REAGENT_SKIP_PG=1` skips them). The other tests
//! check storage-independent behaviour and run on SQLite only.

use std::time::Duration;

use std::sync::Arc;

use futures::StreamExt;
use reagent::agent::RunStatus;
use reagent::domain::Mode;
use reagent::llm::Role;
use reagent::store::{NewConversation, NewRun, StoredEvent, EVENT_ID_BLOCK};
use reagent::testing::scripted::ScriptedLlm;
use serde_json::{json, Value};

use crate::support::app::{error_code, Options, TestApp};
use crate::support::eventually;
use crate::support::sse::{
    assert_ids_rise_with_one_crash_gap, assert_sequential, labels, read_all, Sse,
};
use crate::support::tools::{deploy, FakeTool};

on_both_backends!(
    native_run_streams_events_in_order_and_is_stored,
    json_run_via_chat_creates_the_conversation,
    reconnect_with_last_event_id_gets_the_rest_exactly_once,
    cancel_during_a_slow_tool_ends_cancelled,
    interrupt_during_native_tool_is_pinned_after_the_tool_results,
    interrupt_without_run_is_409_and_not_stored,
    follow_up_run_sees_the_previous_turn,
    restart_replays_old_runs_and_fails_the_killed_one,
    tenants_cannot_see_each_other,
    conversations_crud_and_pagination,
    delete_cancels_the_active_run,
    artifacts_are_served_safely_and_only_to_their_owner,
    approvals_pause_the_tool_until_a_reviewer_decides,
    approval_timeout_blocks_the_call,
);

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
    assert_eq!(
        labels(&events),
        [
            "start",
            "step:thinking",
            "step:tool_start",
            "step:tool_end",
            "answer:start",
            "answer:delta",
            "answer:done",
            "done"
        ]
    );
    assert_eq!(events[0].data["mode"], "native");
    assert_eq!(events[0].data["conversation_id"], conv.as_str());
    assert_eq!(events[3].data["observation"], r#"echo: {"text":"hi"}"#);
    let done = &events.last().unwrap().data;
    assert_eq!(done["status"], "completed");
    assert_eq!(done["tool_calls"], 1);
    assert_eq!(done["answer"], "Scripted answer.");
    let run_id = events[0].data["run_id"].as_str().unwrap();

    let run: Value = app
        .get(&format!("/api/runs/{run_id}"), None)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(run["status"], "completed");
    assert_eq!(run["tool_calls"], 1);
    let detail: Value = app
        .get(&format!("/api/conversations/{conv}"), None)
        .await
        .json()
        .await
        .unwrap();
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
    assert_eq!(
        labels(&events),
        [
            "start",
            "step:thinking",
            "step:tool_start",
            "step:tool_end",
            "answer:start",
            "answer:delta",
            "answer:done",
            "done"
        ]
    );
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
    // First client: reads `start`, then disconnects.
    let first = app.wait_for(&run, |e| e.event == "start").await;
    assert_eq!(first.last().unwrap().event, "start");
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
    let live: Value = app
        .get(&format!("/api/runs/{run}"), None)
        .await
        .json()
        .await
        .unwrap();
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
    let stored: Value = app
        .get(&format!("/api/runs/{run}"), None)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(stored["status"], "cancelled");
    // Cancelling a finished run is a conflict.
    assert_eq!(error_code(app.cancel(&run).await, 409).await, "conflict");
}

async fn interrupt_during_native_tool_is_pinned_after_the_tool_results(db: String) {
    let app = TestApp::spawn_on(&db).await;
    app.llm.tool_calls(&[("c1", "gate", "{}")]);
    app.llm.text("done with interrupt");
    let conv = app.create_conversation(None).await;
    let run = app.start_run(&conv, json!({"query": "q"}), None).await;
    app.wait_for(&run, |e| e.label() == "step:tool_start").await;
    let r = app.interrupt(&conv, "also check y").await;
    assert_eq!(r.status(), 202);
    let accepted: Value = r.json().await.unwrap();
    assert_eq!(accepted["run_id"], run.as_str());
    app.gate.release();
    let events = app.events(&run, None).await;
    let step = events
        .iter()
        .find(|e| e.label() == "step:interrupt")
        .expect("interrupt step");
    assert_eq!(step.data["contents"], json!(["also check y"]));
    assert_eq!(step.data["ids"], json!([accepted["id"]]));
    let second = &app.llm.chat_requests()[1];
    let tool_pos = second
        .messages
        .iter()
        .position(|m| m.role == Role::Tool)
        .expect("tool result");
    let int_pos = second
        .messages
        .iter()
        .position(|m| m.role == Role::User && m.content.starts_with("[USER INTERRUPT]"))
        .expect("interrupt message");
    assert!(int_pos > tool_pos);
    assert!(second.messages[int_pos].content.contains("also check y"));
}

async fn interrupt_without_run_is_409_and_not_stored(db: String) {
    let app = TestApp::spawn_on(&db).await;
    let conv = app.create_conversation(None).await;
    assert_eq!(
        error_code(app.interrupt(&conv, "hello?").await, 409).await,
        "no_active_run"
    );
    assert_eq!(
        error_code(app.interrupt(&conv, "  ").await, 400).await,
        "invalid_request"
    );
    let detail: Value = app
        .get(&format!("/api/conversations/{conv}"), None)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(detail["messages"], json!([]));
    let r = app
        .delete(
            &format!(
                "/api/conversations/{conv}/interrupt/{}",
                uuid::Uuid::new_v4()
            ),
            None,
        )
        .await;
    // An id that was never accepted is unknown, not "already delivered".
    assert_eq!(error_code(r, 404).await, "not_found");
}

async fn follow_up_run_sees_the_previous_turn(db: String) {
    let app = TestApp::spawn_on(&db).await;
    app.llm.text("first");
    app.llm.text("second");
    let conv = app.create_conversation(None).await;
    let run = app
        .start_run(&conv, json!({"query": "what is 2+2"}), None)
        .await;
    app.events(&run, None).await;
    let run2 = app
        .start_run(&conv, json!({"query": "and 3+3"}), None)
        .await;
    app.events(&run2, None).await;
    let reqs = app.llm.chat_requests();
    let texts: Vec<&str> = reqs[1]
        .messages
        .iter()
        .map(|m| m.content.as_str())
        .collect();
    assert!(texts.iter().any(|t| t.contains("what is 2+2")), "{texts:?}");
    assert!(texts.contains(&"Scripted answer."), "{texts:?}");
    assert!(texts.iter().any(|t| t.contains("and 3+3")));
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
    let me = app.app.state.runs.instance_id.clone();
    store.release_leases(&me, &[(killed, 1)]).await.unwrap();
    let db_url = app.db_url.clone();
    let dir = app.stop().await;

    let app2 = TestApp::with(Options {
        db_url: Some(db_url),
        ..Options::default()
    })
    .await;
    assert_eq!(app2.events(&done_run, None).await, before);
    let run: Value = app2
        .get(&format!("/api/runs/{killed}"), None)
        .await
        .json()
        .await
        .unwrap();
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

async fn tenants_cannot_see_each_other(db: String) {
    let mut app = TestApp::with(Options {
        db_url: Some(db.clone()),
        env: vec![("REAGENT_API_KEYS", "alice:ka,bob:kb".into())],
        ..Options::default()
    })
    .await;
    app.llm.text("ok");
    // No key, wrong key → 401; health stays public.
    assert_eq!(
        error_code(app.get("/api/conversations", None).await, 401).await,
        "unauthorized"
    );
    assert_eq!(
        error_code(app.get("/api/conversations", Some("nope")).await, 401).await,
        "unauthorized"
    );
    assert_eq!(app.get("/healthz", None).await.status(), 200);
    app.key = Some("ka".into());
    let conv = app.create_conversation(None).await;
    let run = app.start_run(&conv, json!({"query": "q"}), None).await;
    app.events(&run, None).await;
    let bob = Some("kb");
    for path in [
        format!("/api/conversations/{conv}"),
        format!("/api/runs/{run}"),
        format!("/api/runs/{run}/events"),
        format!("/api/artifacts/{}", uuid::Uuid::new_v4()),
    ] {
        assert_eq!(
            error_code(app.get(&path, bob).await, 404).await,
            "not_found",
            "{path}"
        );
    }
    let r = app
        .post(
            &format!("/api/conversations/{conv}/runs"),
            json!({"query": "x"}),
            bob,
        )
        .await;
    assert_eq!(error_code(r, 404).await, "not_found");
    let list: Value = app
        .get("/api/conversations", bob)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(list["items"], json!([]));
    let list: Value = app
        .get("/api/conversations", None)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(list["items"].as_array().unwrap().len(), 1);
    assert_eq!(
        app.delete(&format!("/api/conversations/{conv}"), bob)
            .await
            .status(),
        404
    );
    assert_eq!(
        app.delete(&format!("/api/conversations/{conv}"), None)
            .await
            .status(),
        204
    );
}

#[tokio::test]
async fn malformed_requests_get_json_errors() {
    let app = TestApp::spawn().await;
    let conv = app.create_conversation(None).await;
    let runs = format!("/api/conversations/{conv}/runs");
    let bad_json = app
        .client
        .post(app.url(&runs))
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(error_code(bad_json, 400).await, "invalid_request");
    let no_type = app
        .client
        .post(app.url(&runs))
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(error_code(no_type, 400).await, "invalid_request");
    for body in [
        json!({"query": ""}),
        json!({"query": 5}),
        json!({}),
        json!({"query": "x", "mode": "turbo"}),
        json!({"query": "x".repeat(100_001)}),
    ] {
        let r = app.post(&runs, body.clone(), None).await;
        assert_eq!(error_code(r, 400).await, "invalid_request");
    }
    let huge = "a".repeat(1024 * 1024 + 1);
    let r = app
        .client
        .post(app.url(&runs))
        .header("content-type", "application/json")
        .body(huge)
        .send()
        .await
        .unwrap();
    assert_eq!(error_code(r, 413).await, "payload_too_large");
    assert_eq!(
        error_code(app.get("/api/nope", None).await, 404).await,
        "not_found"
    );
    assert_eq!(
        error_code(app.get("/api/conversations/not-a-uuid", None).await, 404).await,
        "not_found"
    );
    assert_eq!(
        error_code(
            app.get(&format!("/api/runs/{}", uuid::Uuid::new_v4()), None)
                .await,
            404
        )
        .await,
        "not_found"
    );
    let r = app
        .client
        .put(app.url("/api/conversations"))
        .send()
        .await
        .unwrap();
    assert_eq!(error_code(r, 405).await, "method_not_allowed");
    // Nothing was started by any of these.
    let detail: Value = app
        .get(&format!("/api/conversations/{conv}"), None)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(detail["messages"], json!([]));
}

async fn conversations_crud_and_pagination(db: String) {
    let app = TestApp::spawn_on(&db).await;
    let a = app.create_conversation(None).await;
    let b = app.create_conversation(None).await;
    let page: Value = app
        .get("/api/conversations?limit=1", None)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(page["items"][0]["id"], b.as_str());
    let next = page["next_before"].as_str().unwrap();
    let page2: Value = app
        .get(&format!("/api/conversations?limit=1&before={next}"), None)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(page2["items"][0]["id"], a.as_str());
    assert_eq!(
        error_code(
            app.get("/api/conversations?before=garbage", None).await,
            400
        )
        .await,
        "invalid_request"
    );
    let r = app
        .client
        .patch(app.url(&format!("/api/conversations/{a}")))
        .json(&json!({"title": "renamed"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["title"], "renamed");
    assert!(body["active_run_id"].is_null());
    // Renaming is not activity: the list (newest activity first) keeps its order, so the
    // renamed conversation does not jump to the top under the user's cursor.
    let listed: Value = app
        .get("/api/conversations", None)
        .await
        .json()
        .await
        .unwrap();
    let ids: Vec<&str> = listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["id"].as_str())
        .collect();
    assert_eq!(ids, [b.as_str(), a.as_str()]);
    assert_eq!(
        listed["items"][1]["updated_at"],
        page2["items"][0]["updated_at"]
    );
    let r = app
        .post("/api/conversations", json!({"model": "nope"}), None)
        .await;
    assert_eq!(error_code(r, 400).await, "invalid_request");
    assert_eq!(
        app.delete(&format!("/api/conversations/{a}"), None)
            .await
            .status(),
        204
    );
    assert_eq!(
        app.get(&format!("/api/conversations/{a}"), None)
            .await
            .status(),
        404
    );
}

async fn delete_cancels_the_active_run(db: String) {
    let app = TestApp::spawn_on(&db).await;
    app.llm.tool_calls(&[("c1", "gate", "{}")]);
    let conv = app.create_conversation(None).await;
    let run = app.start_run(&conv, json!({"query": "q"}), None).await;
    app.wait_for(&run, |e| e.label() == "step:tool_start").await;
    assert_eq!(
        app.delete(&format!("/api/conversations/{conv}"), None)
            .await
            .status(),
        204
    );
    assert_eq!(app.app.state.runs.active_runs(), 0);
    assert_eq!(
        app.get(&format!("/api/runs/{run}"), None).await.status(),
        404
    );
}

#[tokio::test]
async fn a_call_written_in_the_content_runs_and_is_counted_by_model() {
    // Issue 22: a small model prints the call as text; the run executes it and /metrics says
    // which model needed the recovery. A reply that names no tool is not counted.
    let app = TestApp::spawn().await;
    app.llm
        .text(r#"{"name": "echo", "arguments": {"text": "hi"}}"#)
        .text(r#"{"name": "web_search", "arguments": {}}"#);
    let conv = app.create_conversation(None).await;
    let run = app.start_run(&conv, json!({"query": "q"}), None).await;
    let events = app.events(&run, None).await;
    let ends: Vec<&Value> = events
        .iter()
        .filter(|e| e.label() == "step:tool_end")
        .map(|e| &e.data)
        .collect();
    assert_eq!(ends.len(), 1, "{events:?}");
    assert_eq!(ends[0]["tool"], "echo");
    assert_eq!(ends[0]["call_id"], "call_1_1");
    assert_eq!(ends[0]["observation"], r#"echo: {"text":"hi"}"#);
    let metrics = app.get("/metrics", None).await.text().await.unwrap();
    assert!(
        metrics.contains("reagent_llm_content_tool_calls_total{model=\"scripted\"} 1\n"),
        "{metrics}"
    );
}

#[tokio::test]
async fn ops_endpoints() {
    let app = TestApp::spawn().await;
    app.llm.tool_calls(&[("c1", "echo", "{}")]);
    app.llm.text("ok");
    let conv = app.create_conversation(None).await;
    let run = app.start_run(&conv, json!({"query": "q"}), None).await;
    app.events(&run, None).await;
    assert_eq!(app.get("/readyz", None).await.status(), 200);
    // Outcomes are counted as `done` is emitted, but the run leaves the active set only after
    // its task has finished, which may be just after the client read `done`: wait (bounded).
    let app = &app;
    let metrics = eventually("the run counted and no longer active", || async move {
        let metrics = app.get("/metrics", None).await.text().await.unwrap();
        if metrics.contains("reagent_runs_total{status=\"completed\"} 1")
            && metrics.contains("reagent_active_runs 0")
        {
            Ok(metrics)
        } else {
            Err(metrics)
        }
    })
    .await;
    assert!(
        metrics.contains("reagent_runs_total{status=\"completed\"} 1"),
        "{metrics}"
    );
    assert!(metrics.contains("reagent_tool_calls_total{tool=\"echo\"} 1"));
    assert!(metrics.contains("reagent_llm_calls_total"));
    assert!(metrics.contains("reagent_active_runs 0"));
    let tools: Value = app.get("/api/tools", None).await.json().await.unwrap();
    let names: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["echo", "gate", "report"]);
    assert_eq!(tools[0]["source"], "builtin");
    let models: Value = app.get("/api/models", None).await.json().await.unwrap();
    assert_eq!(models[0]["name"], "scripted");
    assert_eq!(models[0]["default"], true);
    assert!(models.to_string().find("api_key").is_none());
    let index = app.get("/", None).await;
    assert_eq!(index.status(), 200);
    assert!(index.text().await.unwrap().contains("reagent"));
}

#[tokio::test]
async fn openapi_lists_every_route() {
    let app = TestApp::spawn().await;
    let doc: Value = app
        .get("/api/openapi.json", None)
        .await
        .json()
        .await
        .unwrap();
    assert!(doc["openapi"].as_str().unwrap().starts_with("3."));
    let paths = doc["paths"].as_object().unwrap();
    let expected = [
        ("/api/conversations", vec!["get", "post"]),
        ("/api/conversations/{id}", vec!["get", "patch", "delete"]),
        ("/api/conversations/{id}/runs", vec!["post"]),
        ("/api/conversations/{id}/interrupt", vec!["post"]),
        (
            "/api/conversations/{id}/interrupt/{interrupt_id}",
            vec!["delete"],
        ),
        ("/api/chat", vec!["post"]),
        ("/api/runs/{run_id}", vec!["get"]),
        ("/api/runs/{run_id}/events", vec!["get"]),
        ("/api/runs/{run_id}/cancel", vec!["post"]),
        ("/api/approvals", vec!["get"]),
        ("/api/approvals/{id}", vec!["post"]),
        ("/api/tools", vec!["get"]),
        ("/api/mcp", vec!["get"]),
        ("/api/models", vec!["get"]),
        ("/api/agents", vec!["get"]),
        ("/api/artifacts/{id}", vec!["get"]),
        ("/api/openapi.json", vec!["get"]),
        ("/healthz", vec!["get"]),
        ("/readyz", vec!["get"]),
        ("/metrics", vec!["get"]),
        ("/api/instances", vec!["get"]),
        ("/v1/models", vec!["get"]),
        ("/v1/chat/completions", vec!["post"]),
    ];
    assert_eq!(paths.len(), expected.len());
    for (path, methods) in expected {
        for m in methods {
            assert!(paths[path].get(m).is_some(), "{m} {path} missing");
        }
    }
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
    let pending: Value = app.get("/api/approvals", None).await.json().await.unwrap();
    assert_eq!(pending, json!([]));
}

async fn artifacts_are_served_safely_and_only_to_their_owner(db: String) {
    let mut app = TestApp::with(Options {
        db_url: Some(db.clone()),
        env: vec![("REAGENT_API_KEYS", "alice:ka,bob:kb".into())],
        ..Options::default()
    })
    .await;
    app.key = Some("ka".into());
    app.llm.tool_calls(&[("c1", "report", "{}")]);
    app.llm.text("ok");
    let conv = app.create_conversation(None).await;
    let run = app.start_run(&conv, json!({"query": "q"}), None).await;
    let events = app.events(&run, None).await;
    let end = events
        .iter()
        .find(|e| e.label() == "step:tool_end")
        .unwrap();
    let url = end.data["artifacts"][0]["url"]
        .as_str()
        .unwrap()
        .to_string();
    let r = app.get(&url, None).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "text/html");
    assert_eq!(r.headers()["x-content-type-options"], "nosniff");
    assert_eq!(r.headers()["content-security-policy"], "sandbox");
    assert!(r.headers()["content-disposition"]
        .to_str()
        .unwrap()
        .contains("report.html"));
    assert_eq!(r.bytes().await.unwrap().as_ref(), b"<h1>hi</h1>");
    assert_eq!(
        error_code(app.get(&url, Some("kb")).await, 404).await,
        "not_found"
    );
}

#[tokio::test]
async fn rate_limit_answers_429_with_retry_after() {
    let app = TestApp::with(Options {
        server_toml: "rate_limit_per_minute = 2".into(),
        ..Options::default()
    })
    .await;
    assert_eq!(app.get("/api/tools", None).await.status(), 200);
    assert_eq!(app.get("/api/tools", None).await.status(), 200);
    let r = app.get("/api/tools", None).await;
    let retry: u64 = r.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(retry >= 1);
    assert_eq!(error_code(r, 429).await, "rate_limited");
    // Health checks are not rate limited.
    assert_eq!(app.get("/healthz", None).await.status(), 200);
}

/// An app with alice's and bob's keys (acting as alice) and the `deploy` tool, which requires
/// approval; `toml` adds configuration (e.g. an `[[hooks]]` approval entry).
async fn approval_app(db: &str, toml: &str) -> (TestApp, Arc<FakeTool>) {
    let deploy = deploy();
    let mut app = TestApp::with(Options {
        db_url: Some(db.to_string()),
        env: vec![("REAGENT_API_KEYS", "alice:ka,bob:kb".into())],
        toml: toml.to_string(),
        extra_tools: vec![deploy.clone()],
        ..Options::default()
    })
    .await;
    app.key = Some("ka".into());
    (app, deploy)
}

/// The run's `approval_required` step (reading its stream until it appears).
async fn approval_step(app: &TestApp, run: &str) -> Sse {
    let events = app
        .wait_for(run, |e| e.label() == "step:approval_required")
        .await;
    events.last().unwrap().clone()
}

fn tool_end(events: &[Sse]) -> &Sse {
    events
        .iter()
        .find(|e| e.label() == "step:tool_end")
        .expect("tool_end")
}

/// No `[[hooks]]` configured: registering a `requires_approval` tool alone must pause it.
async fn approvals_pause_the_tool_until_a_reviewer_decides(db: String) {
    let (app, deploy) = approval_app(&db, "").await;
    app.llm.tool_calls(&[("c1", "deploy", r#"{"env":"prod"}"#)]);
    let conv = app.create_conversation(None).await;
    let run = app
        .start_run(&conv, json!({"query": "ship it"}), None)
        .await;
    let step = approval_step(&app, &run).await;
    assert_eq!(step.data["tool"], "deploy");
    assert_eq!(step.data["arguments"], json!({"env": "prod"}));
    let id = step.data["approval_id"].as_str().unwrap().to_string();
    assert_eq!(
        deploy.call_count(),
        0,
        "the tool must wait for the reviewer"
    );

    // The owner sees the request; another tenant neither sees nor decides it.
    let pending: Value = app.get("/api/approvals", None).await.json().await.unwrap();
    assert_eq!(pending[0]["id"], id.as_str());
    assert_eq!(pending[0]["run_id"], run.as_str());
    let bobs: Value = app
        .get("/api/approvals", Some("kb"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(bobs, json!([]));
    let path = format!("/api/approvals/{id}");
    let r = app.post(&path, json!({"approve": true}), Some("kb")).await;
    assert_eq!(error_code(r, 404).await, "not_found");

    // Other runs are not blocked while this one waits.
    app.llm.text("unrelated");
    let other = app.create_conversation(None).await;
    let other_run = app.start_run(&other, json!({"query": "q"}), None).await;
    let other_events = app.events(&other_run, None).await;
    assert_eq!(other_events.last().unwrap().data["status"], "completed");
    assert_eq!(deploy.call_count(), 0);

    app.llm.text("deployed");
    let r = app.post(&path, json!({"approve": true}), None).await;
    assert_eq!(r.status(), 200);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body, json!({"id": id, "approved": true}));
    let events = app.events(&run, None).await;
    assert_eq!(events.last().unwrap().data["status"], "completed");
    let end = tool_end(&events);
    assert_eq!(end.data["blocked"], false);
    assert_eq!(end.data["observation"], r#"deployed to "prod""#);
    assert_eq!(deploy.call_count(), 1);
    // Decided once only.
    let r = app.post(&path, json!({"approve": true}), None).await;
    assert_eq!(error_code(r, 404).await, "not_found");

    // A rejection: the tool does not run and the model is told why.
    app.llm.tool_calls(&[("c2", "deploy", r#"{"env":"prod"}"#)]);
    app.llm.text("not deployed");
    let run2 = app.start_run(&conv, json!({"query": "again"}), None).await;
    let id2 = approval_step(&app, &run2).await.data["approval_id"]
        .as_str()
        .unwrap()
        .to_string();
    let r = app
        .post(
            &format!("/api/approvals/{id2}"),
            json!({"approve": false, "reason": "no"}),
            None,
        )
        .await;
    assert_eq!(r.status(), 200);
    let events = app.events(&run2, None).await;
    assert_eq!(events.last().unwrap().data["status"], "completed");
    let end = tool_end(&events);
    assert_eq!(end.data["blocked"], true);
    assert_eq!(deploy.call_count(), 1, "a rejected call must not run");
    let next = app.llm.chat_requests().pop().unwrap();
    let told = next
        .messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .any(|m| m.content.contains("rejected by a reviewer: no"));
    assert!(told, "{:?}", next.messages);
}

/// A configured approval entry with a 1 s timeout: nobody answers, so the call is blocked.
async fn approval_timeout_blocks_the_call(db: String) {
    let hooks = "[[hooks]]\nkind = \"approval\"\napproval_timeout_s = 1\n";
    let (app, deploy) = approval_app(&db, hooks).await;
    app.llm.tool_calls(&[("c1", "deploy", r#"{"env":"prod"}"#)]);
    app.llm.text("gave up");
    let conv = app.create_conversation(None).await;
    let run = app
        .start_run(&conv, json!({"query": "ship it"}), None)
        .await;
    let events = app.events(&run, None).await;
    let labels = labels(&events);
    assert!(labels.contains(&"step:approval_required".to_string()));
    let end = tool_end(&events);
    assert_eq!(end.data["blocked"], true);
    let observation = end.data["observation"].as_str().unwrap();
    assert!(
        observation.contains("approval timed out after 1 s"),
        "{observation}"
    );
    assert_eq!(deploy.call_count(), 0);
    let pending: Value = app.get("/api/approvals", None).await.json().await.unwrap();
    assert_eq!(pending, json!([]));
}

#[tokio::test]
async fn metrics_key_guards_metrics_and_api_keys_do_not_open_it() {
    let app = TestApp::with(Options {
        env: vec![("REAGENT_API_KEYS", "alice:ka".into())],
        toml: "[auth]\nmetrics_key = \"mk\"\n".into(),
        ..Options::default()
    })
    .await;
    assert_eq!(
        error_code(app.get("/metrics", None).await, 401).await,
        "unauthorized"
    );
    // SPEC §3.5: `/metrics` has its own key; an API key is not it.
    assert_eq!(
        error_code(app.get("/metrics", Some("ka")).await, 401).await,
        "unauthorized"
    );
    let r = app.get("/metrics", Some("mk")).await;
    assert_eq!(r.status(), 200);
    assert!(r.text().await.unwrap().contains("reagent_active_runs 0"));
    // And the metrics key is no API key.
    assert_eq!(
        error_code(app.get("/api/tools", Some("mk")).await, 401).await,
        "unauthorized"
    );
    assert_eq!(app.get("/api/tools", Some("ka")).await.status(), 200);
}

#[tokio::test]
async fn metrics_are_public_without_a_metrics_key_even_with_api_keys() {
    let app = TestApp::with(Options {
        env: vec![("REAGENT_API_KEYS", "alice:ka".into())],
        ..Options::default()
    })
    .await;
    assert_eq!(app.get("/metrics", None).await.status(), 200);
    assert_eq!(
        error_code(app.get("/api/tools", None).await, 401).await,
        "unauthorized"
    );
}
