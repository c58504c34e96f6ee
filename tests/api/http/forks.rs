//! Forks (docs/api.md): `POST /api/conversations/{id}/fork` copies the history up to one
//! finished run's turn into a new conversation with the same settings.

use super::*;

on_both_backends!(
    a_fork_holds_the_history_up_to_the_run,
    forks_refuse_what_is_not_a_finished_run
);

/// `(role, kind, content)` of a conversation's stored messages.
async fn turns(app: &TestApp, conversation: &str) -> Vec<(String, String, String)> {
    let body = app
        .get_json(&format!("/api/conversations/{conversation}"), None)
        .await;
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let s = |k: &str| m[k].as_str().unwrap().to_string();
            (s("role"), s("kind"), s("content"))
        })
        .collect()
}

fn turn(role: &str, kind: &str, content: &str) -> (String, String, String) {
    (role.into(), kind.into(), content.into())
}

async fn a_fork_holds_the_history_up_to_the_run(db: String) {
    let app = TestApp::spawn_on(&db).await;
    let r = app
        .post(
            "/api/conversations",
            json!({"title": "Origin", "system_prompt": "Be terse.", "tools": ["echo"], "engine": "react"}),
            None,
        )
        .await;
    assert_eq!(r.status(), 201);
    let conv = r.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let mut runs = Vec::new();
    for (q, a) in [("first", "one"), ("second", "two")] {
        app.llm
            .text("brief")
            .push_stream(reagent::testing::scripted::Turn::Stream(
                vec![a.into()],
                None,
            ));
        let run = app.start_run(&conv, json!({"query": q}), None).await;
        app.events(&run, None).await;
        runs.push(run);
    }
    let r = app
        .post(
            &format!("/api/conversations/{conv}/fork"),
            json!({"until_run_id": runs[0]}),
            None,
        )
        .await;
    assert_eq!(r.status(), 201);
    let fork: Value = r.json().await.unwrap();
    assert_eq!(
        fork["forked_from"],
        json!({"conversation_id": conv, "run_id": runs[0]})
    );
    assert_eq!(fork["title"], "Origin (fork)");
    for field in ["model", "system_prompt", "tools", "agent", "engine"] {
        let original = app
            .get_json(&format!("/api/conversations/{conv}"), None)
            .await;
        assert_eq!(fork[field], original[field], "{field}");
    }
    let fork_id = fork["id"].as_str().unwrap().to_string();
    assert_eq!(
        turns(&app, &fork_id).await,
        vec![
            turn("user", "query", "first"),
            turn("assistant", "answer", "one")
        ]
    );
    // The original is unchanged, and shows no fork of its own.
    assert_eq!(turns(&app, &conv).await.len(), 4);
    let original = app
        .get_json(&format!("/api/conversations/{conv}"), None)
        .await;
    assert_eq!(original["forked_from"], Value::Null);
    // A run in the fork sees the copied history, not the original's later turn.
    app.llm.text("brief");
    let run = app
        .start_run(&fork_id, json!({"query": "third"}), None)
        .await;
    app.events(&run, None).await;
    let sent = serde_json::to_string(&app.llm.chat_requests().last().unwrap().messages).unwrap();
    assert!(
        sent.contains("first") && sent.contains("one") && sent.contains("third"),
        "{sent}"
    );
    assert!(!sent.contains("second"), "{sent}");
    // Without a run: the settings and no history.
    let r = app
        .post(&format!("/api/conversations/{conv}/fork"), json!({}), None)
        .await;
    assert_eq!(r.status(), 201);
    let empty: Value = r.json().await.unwrap();
    assert_eq!(empty["forked_from"]["run_id"], Value::Null);
    assert_eq!(turns(&app, empty["id"].as_str().unwrap()).await, vec![]);
}

async fn forks_refuse_what_is_not_a_finished_run(db: String) {
    let mut app = TestApp::with(Options {
        db_url: Some(db),
        env: vec![("REAGENT_API_KEYS", "alice:ka,bob:kb".into())],
        ..Options::default()
    })
    .await;
    app.key = Some("ka".into());
    let conv = app.create_conversation(None).await;
    let other = app.create_conversation(None).await;
    app.llm.text("brief");
    let done = app.start_run(&other, json!({"query": "q"}), None).await;
    app.events(&done, None).await;
    // A slow run stays running while the fork is asked for.
    app.llm.push(reagent::testing::scripted::Turn::Reply(
        reagent::testing::scripted::response("slow", vec![]),
        std::time::Duration::from_millis(800),
    ));
    let running = app.start_run(&conv, json!({"query": "q"}), None).await;
    let fork = format!("/api/conversations/{conv}/fork");
    // Another conversation's run and an unknown one are not found; a running one conflicts.
    for until in [done.clone(), uuid::Uuid::new_v4().to_string()] {
        let r = app.post(&fork, json!({"until_run_id": until}), None).await;
        assert_eq!(error_code(r, 404).await, "not_found", "{until}");
    }
    let r = app
        .post(&fork, json!({"until_run_id": running}), None)
        .await;
    assert_eq!(r.status(), 409);
    // Another tenant's conversation is not found.
    let r = app.post(&fork, json!({}), Some("kb")).await;
    assert_eq!(error_code(r, 404).await, "not_found");
    app.events(&running, None).await;
    let r = app
        .post(&fork, json!({"until_run_id": running}), None)
        .await;
    assert_eq!(r.status(), 201);
}
