//! Caller tools (docs/api.md "Caller tools"): a run that calls one ends `requires_action`
//! after running its own tools; `tool_outputs` starts the continuation from the checkpoint,
//! across a restart too; a new query answers the pending calls with the placeholder.

use super::*;
use reagent::agent::caller_tools::NOT_ANSWERED;
use reagent::testing::scripted::{response, Turn};

on_both_backends!(
    a_caller_tool_call_pauses_the_run_and_outputs_continue_it,
    outputs_after_a_restart_continue_the_run,
    a_new_query_answers_the_pending_calls,
    wrong_outputs_and_wrong_runs_are_refused,
    every_pending_call_is_answered_once,
    outputs_sent_twice_at_once_start_one_continuation,
);

fn confirm_tool() -> Value {
    json!([{"type": "function", "function": {
        "name": "confirm",
        "description": "Ask the user to confirm",
        "parameters": {"type": "object", "properties": {"question": {"type": "string"}}}
    }}])
}

/// Starts a run whose model calls `echo` (the run's own) and `confirm` (the caller's) in one
/// response; returns the conversation, the run and its events up to `done`.
async fn paused_run(app: &TestApp) -> (String, String, Vec<Sse>) {
    app.llm.tool_calls(&[
        ("c1", "echo", r#"{"text":"hi"}"#),
        ("c2", "confirm", r#"{"question":"ok?"}"#),
    ]);
    let conv = app.create_conversation(None).await;
    let body = json!({"query": "ask me", "client_tools": confirm_tool()});
    let run = app.start_run(&conv, body, None).await;
    let events = app.events(&run, None).await;
    (conv, run, events)
}

fn assert_paused(events: &[Sse]) {
    let labels = labels(events);
    assert_eq!(
        labels,
        [
            "start",
            "step:tool_start",
            "step:tool_end",
            "step:client_tool_calls",
            "done"
        ],
        "the run's own tool runs, then the pause; no answer"
    );
    assert_eq!(events[1].data["tool"], "echo");
    let calls = json!([{"call_id": "c2", "name": "confirm", "arguments": r#"{"question":"ok?"}"#}]);
    assert_eq!(events[3].data["calls"], calls);
    assert_eq!(events[3].data["iteration"], 1);
    let done = &events[4].data;
    assert_eq!(done["status"], "requires_action");
    assert_eq!(done["required_action"]["tool_calls"], calls);
}

/// Sends the outputs and reads the continuation to its end.
async fn continue_with(app: &TestApp, run: &str, output: &str) -> (String, Vec<Sse>) {
    let r = app
        .post(
            &format!("/api/runs/{run}/tool_outputs"),
            json!({"outputs": [{"call_id": "c2", "output": output}]}),
            None,
        )
        .await;
    assert_eq!(r.status(), 202);
    let body: Value = r.json().await.unwrap();
    let next = body["run_id"].as_str().unwrap().to_string();
    let events = app.events(&next, None).await;
    (next, events)
}

/// The continuation's `start` names the paused run; the model reads both results after its
/// calls, then answers; the iteration count goes on.
fn assert_continued(app: &TestApp, paused: &str, events: &[Sse]) {
    assert_eq!(events[0].event, "start");
    assert_eq!(events[0].data["continues"], paused);
    let done = &events.last().unwrap().data;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["iterations"], 2, "iterations carry over");
    assert_eq!(done["answer"], "Scripted answer.");
    let last = app.llm.chat_requests().pop().unwrap();
    let n = last.messages.len();
    let tail: Vec<(Role, Option<String>, String)> = last.messages[n - 3..]
        .iter()
        .map(|m| (m.role, m.tool_call_id.clone(), m.content.clone()))
        .collect();
    assert_eq!(tail[0].0, Role::Assistant);
    assert_eq!(last.messages[n - 3].tool_calls.len(), 2);
    assert_eq!(tail[1].1.as_deref(), Some("c1"));
    assert_eq!(tail[2], (Role::Tool, Some("c2".into()), "yes".into()));
    let names: Vec<&str> = last.tools.iter().map(|t| t.name.as_str()).collect();
    assert!(
        names.contains(&"confirm"),
        "the caller's tools stay offered: {names:?}"
    );
}

async fn a_caller_tool_call_pauses_the_run_and_outputs_continue_it(db: String) {
    let app = TestApp::spawn_on(&db).await;
    let (_, run, events) = paused_run(&app).await;
    assert_paused(&events);
    let first = app.llm.chat_requests().pop().unwrap();
    assert!(first.tools.iter().any(|t| t.name == "confirm"));
    let stored: Value = app.get_json(&format!("/api/runs/{run}"), None).await;
    assert_eq!(stored["status"], "requires_action");

    app.llm.text("confirmed");
    let (_, next) = continue_with(&app, &run, "yes").await;
    assert_continued(&app, &run, &next);

    // Answered once: the second time the run is no longer its conversation's latest.
    let again = app
        .post(
            &format!("/api/runs/{run}/tool_outputs"),
            json!({"outputs": [{"call_id": "c2", "output": "yes"}]}),
            None,
        )
        .await;
    assert_eq!(error_code(again, 409).await, "conflict");
}

async fn outputs_after_a_restart_continue_the_run(db: String) {
    let app = TestApp::spawn_on(&db).await;
    let (_, run, events) = paused_run(&app).await;
    assert_paused(&events);
    app.stop().await;

    let app = TestApp::spawn_on(&db).await;
    app.llm.text("confirmed");
    let (_, next) = continue_with(&app, &run, "yes").await;
    assert_continued(&app, &run, &next);
}

async fn a_new_query_answers_the_pending_calls(db: String) {
    let app = TestApp::spawn_on(&db).await;
    let (conv, run, _) = paused_run(&app).await;
    app.llm.text("fine");
    let next = app
        .start_run(&conv, json!({"query": "never mind"}), None)
        .await;
    let events = app.events(&next, None).await;
    assert_eq!(events.last().unwrap().data["status"], "completed");
    let last = app.llm.chat_requests().pop().unwrap();
    let n = last.messages.len();
    let tail: Vec<(Role, Option<String>, String)> = last.messages[n - 4..]
        .iter()
        .map(|m| (m.role, m.tool_call_id.clone(), m.content.clone()))
        .collect();
    assert_eq!(last.messages[n - 4].tool_calls.len(), 2);
    assert_eq!(tail[1].1.as_deref(), Some("c1"));
    assert_eq!(
        tail[2],
        (Role::Tool, Some("c2".into()), NOT_ANSWERED.into())
    );
    assert_eq!(tail[3].0, Role::User);
    assert_eq!(tail[3].2, "never mind");
    // The paused run's calls are answered: its outputs come too late.
    let late = app
        .post(
            &format!("/api/runs/{run}/tool_outputs"),
            json!({"outputs": [{"call_id": "c2", "output": "yes"}]}),
            None,
        )
        .await;
    assert_eq!(error_code(late, 409).await, "conflict");
}

async fn wrong_outputs_and_wrong_runs_are_refused(db: String) {
    let mut app = TestApp::with(Options {
        db_url: Some(db.clone()),
        env: vec![("REAGENT_API_KEYS", "alice:ka,bob:kb".into())],
        ..Options::default()
    })
    .await;
    app.key = Some("ka".into());
    // A caller tool named like one of the run's own tools.
    let conv = app.create_conversation(None).await;
    let clash = json!([{"type": "function", "function": {"name": "echo", "parameters": {"type": "object"}}}]);
    let r = app
        .post(
            &format!("/api/conversations/{conv}/runs"),
            json!({"query": "q", "client_tools": clash}),
            None,
        )
        .await;
    assert_eq!(error_code(r, 400).await, "invalid_request");
    let r = app
        .post(
            &format!("/api/conversations/{conv}/runs"),
            json!({"query": "q", "engine": "dag", "client_tools": confirm_tool()}),
            None,
        )
        .await;
    assert_eq!(r.status(), 409);
    let body: Value = r.json().await.unwrap();
    assert!(
        body["error"]["message"].as_str().unwrap().contains("dag"),
        "{body}"
    );

    let (_, run, _) = paused_run(&app).await;
    let path = format!("/api/runs/{run}/tool_outputs");
    let r = app.post(&path, json!({"outputs": []}), None).await;
    assert_eq!(r.status(), 400);
    let body: Value = r.json().await.unwrap();
    assert!(
        body["error"]["message"].as_str().unwrap().contains("c2"),
        "{body}"
    );
    let unknown =
        json!({"outputs": [{"call_id": "c2", "output": "y"}, {"call_id": "zz", "output": "n"}]});
    let r = app.post(&path, unknown, None).await;
    assert_eq!(r.status(), 400);
    let body: Value = r.json().await.unwrap();
    assert!(
        body["error"]["message"].as_str().unwrap().contains("zz"),
        "{body}"
    );
    let outputs = json!({"outputs": [{"call_id": "c2", "output": "y"}]});
    let r = app.post(&path, outputs.clone(), Some("kb")).await;
    assert_eq!(error_code(r, 404).await, "not_found");

    // A run that does not wait for outputs.
    app.llm.text("plain");
    let other = app.create_conversation(None).await;
    let done = app.start_run(&other, json!({"query": "q"}), None).await;
    app.events(&done, None).await;
    let r = app
        .post(&format!("/api/runs/{done}/tool_outputs"), outputs, None)
        .await;
    assert_eq!(error_code(r, 409).await, "conflict");
}

/// Two caller calls pending: answering one names the other (400), answering one twice names it
/// (400); nothing starts, and the right outputs still continue the run.
async fn every_pending_call_is_answered_once(db: String) {
    let app = TestApp::spawn_on(&db).await;
    app.llm.tool_calls(&[
        ("c1", "confirm", r#"{"question":"a?"}"#),
        ("c2", "confirm", r#"{"question":"b?"}"#),
    ]);
    let conv = app.create_conversation(None).await;
    let body = json!({"query": "ask me twice", "client_tools": confirm_tool()});
    let run = app.start_run(&conv, body, None).await;
    let events = app.events(&run, None).await;
    assert_eq!(events.last().unwrap().data["status"], "requires_action");
    let path = format!("/api/runs/{run}/tool_outputs");
    let refused = [
        (json!([{"call_id": "c1", "output": "y"}]), "c2"),
        (
            json!([{"call_id": "c1", "output": "y"}, {"call_id": "c1", "output": "n"}]),
            "c1",
        ),
    ];
    for (outputs, named) in refused {
        let r = app.post(&path, json!({"outputs": outputs}), None).await;
        assert_eq!(r.status(), 400);
        let body: Value = r.json().await.unwrap();
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains(named), "{outputs}: {body}");
    }
    let stored: Value = app.get_json(&format!("/api/runs/{run}"), None).await;
    assert_eq!(stored["status"], "requires_action", "still waiting");
    app.llm.text("both");
    let both =
        json!({"outputs": [{"call_id": "c2", "output": "n"}, {"call_id": "c1", "output": "y"}]});
    let r = app.post(&path, both, None).await;
    assert_eq!(r.status(), 202);
    let next: Value = r.json().await.unwrap();
    let events = app.events(next["run_id"].as_str().unwrap(), None).await;
    assert_eq!(events.last().unwrap().data["status"], "completed");
    // In the calls' order, whatever the order of the outputs.
    let last = app.llm.chat_requests().pop().unwrap();
    let results: Vec<(Option<&str>, &str)> = last
        .messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| (m.tool_call_id.as_deref(), m.content.as_str()))
        .collect();
    assert_eq!(results, [(Some("c1"), "y"), (Some("c2"), "n")]);
}

/// The same outputs sent twice at once: one continuation (202), the other 409.
async fn outputs_sent_twice_at_once_start_one_continuation(db: String) {
    let app = TestApp::spawn_on(&db).await;
    let (_, run, _) = paused_run(&app).await;
    app.llm.push(Turn::Reply(
        response("confirmed", vec![]),
        Duration::from_millis(300),
    ));
    let path = format!("/api/runs/{run}/tool_outputs");
    let outputs = json!({"outputs": [{"call_id": "c2", "output": "yes"}]});
    let (a, b) = tokio::join!(
        app.post(&path, outputs.clone(), None),
        app.post(&path, outputs.clone(), None)
    );
    let mut answers = Vec::new();
    for r in [a, b] {
        answers.push((r.status().as_u16(), r.json::<Value>().await.unwrap()));
    }
    answers.sort_by_key(|(status, _)| *status);
    assert_eq!(answers[0].0, 202, "{answers:?}");
    assert_eq!(answers[1].0, 409, "{answers:?}");
    let next = answers[0].1["run_id"].as_str().unwrap();
    let events = app.events(next, None).await;
    assert_eq!(events.last().unwrap().data["status"], "completed");
    let answered = app
        .llm
        .chat_requests()
        .iter()
        .filter(|r| {
            r.messages
                .iter()
                .any(|m| m.tool_call_id.as_deref() == Some("c2"))
        })
        .count();
    assert_eq!(answered, 1, "one continuation called the model");
}

/// JSON mode: the caller's tools are in the prompt's tool list, the action naming one pauses
/// the run, and its output comes back as the observation.
#[tokio::test]
async fn json_mode_offers_caller_tools_and_reads_their_output() {
    let app = TestApp::with(Options {
        llm: ScriptedLlm::json(),
        ..Options::default()
    })
    .await;
    app.llm
        .text(r#"{"type": "tool_call", "tool_name": "confirm", "tool_args": {"question": "ok?"}}"#);
    let conv = app.create_conversation(None).await;
    let body = json!({"query": "ask me", "client_tools": confirm_tool()});
    let run = app.start_run(&conv, body, None).await;
    let events = app.events(&run, None).await;
    let done = &events.last().unwrap().data;
    assert_eq!(done["status"], "requires_action", "{done}");
    let call = &done["required_action"]["tool_calls"][0];
    assert_eq!(call["name"], "confirm");
    assert_eq!(call["arguments"], r#"{"question":"ok?"}"#);
    let first = app.llm.chat_requests().pop().unwrap();
    assert!(
        first.messages[0].content.contains("confirm"),
        "the prompt lists it"
    );

    app.llm
        .text(r#"{"type": "final_answer", "answer": "confirmed"}"#);
    let call_id = call["call_id"].as_str().unwrap();
    let outputs = json!({"outputs": [{"call_id": call_id, "output": "yes"}]});
    let r = app
        .post(&format!("/api/runs/{run}/tool_outputs"), outputs, None)
        .await;
    assert_eq!(r.status(), 202);
    let next: Value = r.json().await.unwrap();
    let events = app.events(next["run_id"].as_str().unwrap(), None).await;
    assert_eq!(events.last().unwrap().data["status"], "completed");
    let last = app.llm.chat_requests().pop().unwrap();
    let observation = &last.messages.last().unwrap().content;
    assert_eq!(observation, "Observation: yes");
}
