//! Runs: their lifecycle, starts with a new conversation or seeded history, group-committed
//! concurrent starts.

use super::*;

pub(super) async fn run_lifecycle(store: &Store) {
    let who = owner("runs");
    let conv = conversation(store, &who).await;
    let id = run(store, &who, conv).await;

    let row = store.get_run(&who, id).await.unwrap().unwrap();
    assert_eq!(
        (row.status, row.conversation_id, row.finished_at),
        (RunStatus::Running, conv, None)
    );
    assert!(store.get_run("someone-else", id).await.unwrap().is_none());
    assert_eq!(store.get_run_any(id).await.unwrap().unwrap(), row);
    assert_eq!(store.active_run_for(conv).await.unwrap(), Some(id));
    let c = stored_conversation(store, &who, conv).await;
    assert_eq!(c.active_run_id, Some(id));
    assert!(is_running(store, id).await);

    // One running run per conversation.
    let second = NewRun {
        id: Uuid::new_v4(),
        conversation_id: conv,
        owner: who.clone(),
        mode: Mode::Json,
        model: "m".into(),
        traceparent: None,
    };
    assert!(matches!(
        store.create_run(second).await,
        Err(StoreError::Conflict(_))
    ));

    assert!(!store
        .finish_run(id, finish(RunStatus::Running))
        .await
        .unwrap());
    assert!(store
        .finish_run(id, finish(RunStatus::Completed))
        .await
        .unwrap());
    let mut late = finish(RunStatus::Cancelled);
    late.error = Some("too late".into());
    assert!(
        !store.finish_run(id, late).await.unwrap(),
        "terminal state written once"
    );
    assert!(!store
        .finish_run(Uuid::new_v4(), finish(RunStatus::Failed))
        .await
        .unwrap());

    let done = store.get_run(&who, id).await.unwrap().unwrap();
    assert_eq!(done.status, RunStatus::Completed);
    assert_eq!(
        (done.iterations, done.tool_calls, done.error.as_deref()),
        (3, 2, None)
    );
    assert_eq!(done.usage, finish(RunStatus::Completed).usage);
    assert!(done.finished_at.unwrap() >= done.started_at);
    assert_eq!(store.active_run_for(conv).await.unwrap(), None);
    assert!(stored_conversation(store, &who, conv)
        .await
        .active_run_id
        .is_none());
    assert!(!is_running(store, id).await);

    let wire = serde_json::to_value(views::Run::from(done.clone())).unwrap();
    assert_eq!(
        keys(&wire),
        [
            "conversation_id",
            "error",
            "finished_at",
            "id",
            "iterations",
            "mode",
            "model",
            "started_at",
            "status",
            "tool_calls",
            "usage"
        ]
    );
    assert_eq!(wire["status"], "completed");
    assert_eq!(
        wire["usage"],
        json!({"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15, "llm_calls": 2,
               "cache_read_tokens": 7, "cache_write_tokens": 3, "cost_usd": 0.00125,
               "unpriced_calls": 1, "estimated_calls": 1})
    );

    // Once finished, the conversation can run again.
    let again = run(store, &who, conv).await;
    assert_eq!(store.list_runs(conv).await.unwrap().len(), 2);
    assert!(store
        .finish_run(again, finish(RunStatus::Failed))
        .await
        .unwrap());
}

/// `POST /api/chat` without a conversation id: conversation, run and query in one
/// transaction — all three stored, or (when any insert fails) none.
pub(super) async fn conversation_with_first_run(store: &Store) {
    let who = owner("first-run");
    let draft = Store::draft_conversation(
        &who,
        NewConversation {
            title: Some("hello".into()),
            model: Some("m".into()),
            system_prompt: Some("be brief".into()),
            tools: Some(vec!["echo".into()]),
            agent: None,
            agent_version: None,
            engine: None,
        },
    );
    let run_id = Uuid::new_v4();
    let new_run = |id: Uuid, conversation_id: Uuid| NewRun {
        id,
        conversation_id,
        owner: who.clone(),
        mode: Mode::Native,
        model: "m".into(),
        traceparent: None,
    };
    let query = |conversation_id: Uuid, run_id: Uuid| NewMessage {
        id: None,
        conversation_id,
        role: MessageRole::User,
        kind: MessageKind::Query,
        content: "hello there".into(),
        run_id: Some(run_id),
        images: Vec::new(),
    };
    // Not stored until written.
    assert!(!has_conversation(store, &who, draft.id).await);
    store
        .create_conversation_with_run(&draft, new_run(run_id, draft.id), query(draft.id, run_id))
        .await
        .unwrap();
    let c = stored_conversation(store, &who, draft.id).await;
    assert_eq!(c.title.as_deref(), Some("hello"));
    assert_eq!(c.model.as_deref(), Some("m"));
    assert_eq!(c.system_prompt.as_deref(), Some("be brief"));
    assert_eq!(c.tools, Some(vec!["echo".to_string()]));
    assert_eq!(c.created_at, draft.created_at);
    assert!(c.updated_at >= c.created_at);
    assert_eq!(c.active_run_id, Some(run_id));
    let row = store.get_run(&who, run_id).await.unwrap().unwrap();
    assert_eq!(row.status, RunStatus::Running);
    assert_eq!(row.conversation_id, draft.id);
    let msgs = store.list_messages(draft.id).await.unwrap();
    assert_eq!(msgs.len(), 1);
    assert_eq!(
        (
            msgs[0].kind.as_str(),
            msgs[0].content.as_str(),
            msgs[0].run_id
        ),
        ("query", "hello there", Some(run_id))
    );
    assert_eq!(msgs[0].created_at, c.updated_at);

    // The run refers to a conversation that does not exist: the run insert fails after the
    // conversation's, and the transaction leaves nothing behind.
    let orphan = Store::draft_conversation(&who, NewConversation::default());
    let bad_run = Uuid::new_v4();
    let missing = Uuid::new_v4();
    assert!(store
        .create_conversation_with_run(
            &orphan,
            new_run(bad_run, missing),
            query(orphan.id, bad_run)
        )
        .await
        .is_err());
    assert!(!has_conversation(store, &who, orphan.id).await);
    assert!(store.get_run(&who, bad_run).await.unwrap().is_none());
    // The same draft can still be stored properly afterwards.
    let good = Uuid::new_v4();
    store
        .create_conversation_with_run(&orphan, new_run(good, orphan.id), query(orphan.id, good))
        .await
        .unwrap();
    assert_eq!(
        stored_conversation(store, &who, orphan.id)
            .await
            .active_run_id,
        Some(good)
    );
}

/// Starts arriving together are written together (group commit); one conflicting start among
/// them fails alone and the others are stored.
pub(super) async fn concurrent_starts(store: &Store) {
    let who = owner("burst");
    let busy = conversation(store, &who).await;
    let running = run(store, &who, busy).await;
    let start = |conversation_id: Uuid| {
        let run_id = Uuid::new_v4();
        let run = NewRun {
            id: run_id,
            conversation_id,
            owner: who.clone(),
            mode: Mode::Native,
            model: "m".into(),
            traceparent: None,
        };
        let query = NewMessage {
            id: None,
            conversation_id,
            role: MessageRole::User,
            kind: MessageKind::Query,
            content: format!("query of {run_id}"),
            run_id: Some(run_id),
            images: Vec::new(),
        };
        (run_id, run, query)
    };
    let mut fresh = Vec::new();
    let mut calls = Vec::new();
    for i in 0..40 {
        if i == 17 {
            // The conversation already has a running run: this start must fail alone.
            let (_, run, query) = start(busy);
            let s = store.clone();
            calls.push(tokio::spawn(async move {
                s.create_run_with_query(run, query).await
            }));
            continue;
        }
        let draft = Store::draft_conversation(&who, NewConversation::default());
        let (run_id, run, query) = start(draft.id);
        fresh.push((draft.id, run_id));
        let s = store.clone();
        calls.push(tokio::spawn(async move {
            s.create_conversation_with_run(&draft, run, query).await
        }));
    }
    let results: Vec<_> = futures::future::join_all(calls)
        .await
        .into_iter()
        .map(|r| r.unwrap())
        .collect();
    for (i, r) in results.iter().enumerate() {
        if i == 17 {
            assert!(matches!(r, Err(StoreError::Conflict(_))), "{r:?}");
        } else {
            assert!(r.is_ok(), "start {i}: {r:?}");
        }
    }
    for (conversation_id, run_id) in fresh {
        let c = store
            .get_conversation(&who, conversation_id)
            .await
            .unwrap()
            .expect("the conversation of a successful start is stored");
        assert_eq!(c.active_run_id, Some(run_id));
        let msgs = store.list_messages(conversation_id).await.unwrap();
        assert_eq!(msgs.len(), 1);
        assert_eq!(msgs[0].run_id, Some(run_id));
    }
    // The busy conversation still has only its first run, and no stray query.
    let c = stored_conversation(store, &who, busy).await;
    assert_eq!(c.active_run_id, Some(running));
    assert!(store.list_messages(busy).await.unwrap().is_empty());
}

/// A conversation seeded with earlier turns (the OpenAI-compatible API's request history):
/// the turns come before the query, in order, stored in the run start's transaction.
pub(super) async fn conversation_seeded_with_history(store: &Store) {
    let who = owner("seeded");
    let draft = Store::draft_conversation(
        &who,
        NewConversation {
            agent: Some("helper".into()),
            ..NewConversation::default()
        },
    );
    let run_id = Uuid::new_v4();
    let turn =
        |role: MessageRole, kind: MessageKind, content: &str, run_id: Option<Uuid>| NewMessage {
            id: None,
            conversation_id: draft.id,
            role,
            kind,
            content: content.into(),
            run_id,
            images: Vec::new(),
        };
    let history = vec![
        turn(MessageRole::User, MessageKind::Query, "q1", None),
        turn(MessageRole::Assistant, MessageKind::Answer, "a1", None),
    ];
    let run = NewRun {
        id: run_id,
        conversation_id: draft.id,
        owner: who.clone(),
        mode: Mode::Native,
        model: "m".into(),
        traceparent: None,
    };
    store
        .create_conversation_with_history(
            &draft,
            history,
            run,
            turn(MessageRole::User, MessageKind::Query, "q2", Some(run_id)),
        )
        .await
        .unwrap();
    let c = stored_conversation(store, &who, draft.id).await;
    assert_eq!(c.agent.as_deref(), Some("helper"));
    let msgs: Vec<(String, Option<Uuid>)> = store
        .list_messages(draft.id)
        .await
        .unwrap()
        .into_iter()
        .map(|m| (m.content, m.run_id))
        .collect();
    assert_eq!(
        msgs,
        [
            ("q1".to_string(), None),
            ("a1".to_string(), None),
            ("q2".to_string(), Some(run_id))
        ]
    );
}
