//! Forks (docs/api.md): `POST /api/conversations/{id}/fork` copies the history up to one
//! finished run's turn into a new conversation with the same settings.

use super::*;

on_both_backends!(
    a_fork_holds_the_history_up_to_the_run,
    forks_refuse_what_is_not_a_finished_run,
    forks_of_forks_fork_at_copied_turns_at_any_depth,
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

/// Runs `(query, answer)` turns in `conv`, returning their run ids.
async fn run_turns(app: &TestApp, conv: &str, turns: &[(&str, &str)]) -> Vec<String> {
    let mut runs = Vec::new();
    for (q, a) in turns {
        app.llm
            .text("brief")
            .push_stream(reagent::testing::scripted::Turn::Stream(
                vec![a.to_string()],
                None,
            ));
        let run = app.start_run(conv, json!({"query": q}), None).await;
        app.events(&run, None).await;
        runs.push(run);
    }
    runs
}

/// Forks `conv` at `run`: the new conversation's id (201), or the failing status.
async fn fork_at(app: &TestApp, conv: &str, run: &str) -> Result<String, u16> {
    let r = app
        .post(
            &format!("/api/conversations/{conv}/fork"),
            json!({"until_run_id": run}),
            None,
        )
        .await;
    if r.status() != 201 {
        return Err(r.status().as_u16());
    }
    let fork: Value = r.json().await.unwrap();
    assert_eq!(fork["forked_from"]["run_id"], run);
    Ok(fork["id"].as_str().unwrap().to_string())
}

/// Regenerate and edit in a fork fork at a turn the fork copied, whose messages keep the
/// original's run id (issue 51, item 5): at any depth, and after the original is deleted.
async fn forks_of_forks_fork_at_copied_turns_at_any_depth(db: String) {
    let app = TestApp::spawn_on(&db).await;
    let origin = app.create_conversation(None).await;
    let r = run_turns(&app, &origin, &[("q1", "a1"), ("q2", "a2"), ("q3", "a3")]).await;
    let first = fork_at(&app, &origin, &r[2]).await.unwrap();
    let own = run_turns(&app, &first, &[("q4", "a4")]).await;
    // "Regenerate" of the fork's third turn: a fork at the copied second turn.
    let regenerated = fork_at(&app, &first, &r[1]).await.unwrap();
    let qa = |q: &str, a: &str| vec![turn("user", "query", q), turn("assistant", "answer", a)];
    assert_eq!(
        turns(&app, &regenerated).await,
        [qa("q1", "a1"), qa("q2", "a2")].concat()
    );
    // Deeper: a fork of the fork at its own run, then in that one at a turn copied twice.
    let second = fork_at(&app, &first, &own[0]).await.unwrap();
    let third = fork_at(&app, &second, &r[0]).await.unwrap();
    assert_eq!(turns(&app, &third).await, qa("q1", "a1"));
    // A run goes on in it with the copied history.
    let next = run_turns(&app, &third, &[("q5", "a5")]).await;
    assert_eq!(
        turns(&app, &third).await,
        [qa("q1", "a1"), qa("q5", "a5")].concat()
    );
    // With the original gone (its runs with it), the copies still fork at their turns.
    assert_eq!(
        app.delete(&format!("/api/conversations/{origin}"), None)
            .await
            .status(),
        204
    );
    let after = fork_at(&app, &second, &r[1]).await.unwrap();
    assert_eq!(
        turns(&app, &after).await,
        [qa("q1", "a1"), qa("q2", "a2")].concat()
    );
    // A run whose turn the conversation does not hold is still not found.
    assert_eq!(fork_at(&app, &third, &r[1]).await, Err(404));
    assert_eq!(fork_at(&app, &first, &next[0]).await, Err(404));
}
