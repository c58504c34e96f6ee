//! Approvals: a `requires_approval` tool pauses until a reviewer decides, or times out.

use super::*;

on_both_backends!(
    approvals_pause_the_tool_until_a_reviewer_decides,
    approval_timeout_blocks_the_call,
);

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
    let pending: Value = app.get_json("/api/approvals", None).await;
    assert_eq!(pending[0]["id"], id.as_str());
    assert_eq!(pending[0]["run_id"], run.as_str());
    let bobs: Value = app.get_json("/api/approvals", Some("kb")).await;
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
    let pending: Value = app.get_json("/api/approvals", None).await;
    assert_eq!(pending, json!([]));
}
