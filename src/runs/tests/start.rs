//! Starting runs: new and existing conversations, refused starts, one active run.

use super::*;

#[tokio::test]
async fn a_new_conversation_is_stored_with_its_first_run() {
    let f = fixture().await;
    f.llm.text("brief");
    let request = StartRun::new(
        ConversationRef::titled_after("  hello there ", None),
        "hello",
    );
    let live = f.runs.start("alice", request).await.unwrap();
    let (names, outcome) = finished(&live).await;
    assert_eq!(names.first().map(String::as_str), Some("start"));
    assert_eq!(outcome.status, RunStatus::Completed);
    let conv = f.runs.owned("alice", live.conversation_id).await.unwrap();
    assert_eq!(conv.title.as_deref(), Some("hello there"));
    let long = "word ".repeat(30);
    let title = crate::runs::title_after(&long);
    assert_eq!(title.chars().count(), 80, "{title}");
    assert!(title.ends_with("word…"), "{title}");
    assert_eq!(crate::runs::title_after(" a\n b "), "a b");
    let kinds: Vec<String> = f
        .store
        .list_messages(conv.id)
        .await
        .unwrap()
        .into_iter()
        .map(|m| format!("{}:{}", m.kind, m.content))
        .collect();
    assert_eq!(kinds, ["query:hello", "answer:Scripted answer."]);
}

#[tokio::test]
async fn a_refused_start_stores_nothing() {
    let f = fixture().await;
    let new = |tools: Option<Vec<String>>| {
        ConversationRef::New(NewConversation {
            tools,
            ..NewConversation::default()
        })
    };
    let refusals = [
        (StartRun::new(new(None), " \n"), "query must not be empty"),
        (
            StartRun::new(new(None), "x".repeat(21)),
            "query is longer than 20 characters",
        ),
        (
            StartRun {
                max_iterations: Some(0),
                ..StartRun::new(new(None), "q")
            },
            "max_iterations must be at least 1",
        ),
        (
            StartRun::new(new(Some(vec!["nope".into()])), "q"),
            "unknown tool 'nope'",
        ),
        (
            StartRun {
                model: Some("gpt-9".into()),
                ..StartRun::new(new(None), "q")
            },
            "unknown model 'gpt-9'",
        ),
        (
            StartRun::new(
                ConversationRef::New(NewConversation {
                    agent: Some("nobody".into()),
                    ..NewConversation::default()
                }),
                "q",
            ),
            "unknown agent 'nobody'",
        ),
        (
            StartRun {
                history: vec![crate::runs::PriorTurn::text(
                    crate::domain::MessageRole::User,
                    "x".repeat(21),
                )],
                ..StartRun::new(new(None), "q")
            },
            "history is longer than 20 characters",
        ),
    ];
    for (request, message) in refusals {
        let err = f.runs.start("alice", request).await.unwrap_err();
        assert_eq!(err.to_string(), message);
    }
    let (stored, _) = f.store.list_conversations("alice", 10, None).await.unwrap();
    assert!(stored.is_empty(), "nothing stored: {stored:?}");
    let bobs = f.conversation("bob").await;
    assert!(matches!(
        f.start_in("alice", bobs, "q").await,
        Err(RunError::NotFound)
    ));
    // Supplied history only seeds a new conversation.
    let mine = f.conversation("alice").await;
    let seeded = StartRun {
        history: vec![crate::runs::PriorTurn::text(
            crate::domain::MessageRole::Assistant,
            "earlier",
        )],
        ..StartRun::new(ConversationRef::Existing(mine), "q")
    };
    let err = f.runs.start("alice", seeded).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "a history can only be given with a new conversation"
    );
    assert_eq!(f.runs.active_runs(), 0);
}

#[tokio::test]
async fn a_conversation_has_one_active_run_at_a_time() {
    let f = fixture().await;
    let live = f.slow_run("", Duration::from_millis(300)).await;
    let again = f.start_in("", live.conversation_id, "again").await;
    assert!(matches!(again, Err(RunError::Active)), "{again:?}");
    assert_eq!(f.runs.active_run_of(live.conversation_id), Some(live.id));
    finished(&live).await;
    f.llm.text("second");
    let next = f.start_in("", live.conversation_id, "again").await.unwrap();
    assert_ne!(next.id, live.id);
    finished(&next).await;
}
