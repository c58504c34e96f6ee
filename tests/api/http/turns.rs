//! Interrupts during and without a run, follow-up turns, a tool call written in the content.

use super::*;

on_both_backends!(
    interrupt_during_native_tool_is_pinned_after_the_tool_results,
    interrupt_without_run_is_409_and_not_stored,
    follow_up_run_sees_the_previous_turn,
);

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
        .get_json(&format!("/api/conversations/{conv}"), None)
        .await;
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
