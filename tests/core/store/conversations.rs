//! Conversations (CRUD, tenancy, pagination) and their messages.

use super::*;

pub(super) async fn conversations_crud_and_isolation(store: &Store) {
    let alice = owner("alice");
    let bob = owner("bob");
    let new = NewConversation {
        title: Some("first".into()),
        model: Some("gpt".into()),
        system_prompt: Some("be brief".into()),
        tools: Some(vec!["calculator".into(), "http_get".into()]),
        agent: Some("helper".into()),
        agent_version: Some(4),
        engine: Some(reagent::domain::Engine::Dag),
    };
    let created = store.create_conversation(&alice, new).await.unwrap();
    let got = stored_conversation(store, &alice, created.id).await;
    assert_eq!(got, created);
    assert_eq!(got.tools.as_deref().unwrap(), ["calculator", "http_get"]);
    assert_eq!(got.agent.as_deref(), Some("helper"));

    // The wire shape is the HTTP layer's view of the row.
    let wire = serde_json::to_value(views::Conversation::from(got.clone())).unwrap();
    assert_eq!(
        keys(&wire),
        [
            "active_run_id",
            "agent",
            "agent_version",
            "created_at",
            "engine",
            "forked_from",
            "id",
            "model",
            "system_prompt",
            "title",
            "tools",
            "updated_at"
        ]
    );
    assert_eq!(wire["id"], json!(created.id.to_string()));
    assert_eq!(wire["engine"], "dag");

    assert!(!has_conversation(store, &bob, created.id).await);
    assert!(store
        .rename_conversation(&bob, created.id, "x")
        .await
        .unwrap()
        .is_none());
    assert!(!store.delete_conversation(&bob, created.id).await.unwrap());
    assert!(store
        .list_conversations(&bob, 10, None)
        .await
        .unwrap()
        .0
        .is_empty());

    let renamed = store
        .rename_conversation(&alice, created.id, "second")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(renamed.title.as_deref(), Some("second"));
    assert_eq!(
        renamed.updated_at, created.updated_at,
        "a rename is not activity"
    );
    assert_eq!(renamed.created_at, created.created_at);

    assert!(store.delete_conversation(&alice, created.id).await.unwrap());
    assert!(!has_conversation(store, &alice, created.id).await);
    assert!(!store.delete_conversation(&alice, created.id).await.unwrap());
}

pub(super) async fn conversations_pagination(store: &Store) {
    let who = owner("pager");
    let mut ids = Vec::new();
    for _ in 0..5 {
        ids.push(conversation(store, &who).await);
    }
    // Touching the first one makes it the most recently updated.
    store.touch_conversation(ids[0]).await.unwrap();

    let mut seen = Vec::new();
    let mut cursor = None;
    let mut pages = 0;
    loop {
        let (items, next) = store.list_conversations(&who, 2, cursor).await.unwrap();
        assert!(items.len() <= 2);
        seen.extend(items);
        pages += 1;
        match next {
            Some(c) => cursor = Some(c),
            None => break,
        }
        assert!(pages < 10, "pagination does not terminate");
    }
    assert_eq!(pages, 3);
    assert_eq!(seen.len(), 5);
    assert_eq!(
        seen.iter().map(|c| c.id).collect::<HashSet<_>>(),
        ids.iter().copied().collect()
    );
    assert_eq!(seen[0].id, ids[0], "touched conversation first");
    for pair in seen.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        assert!(
            (a.updated_at, a.id) > (b.updated_at, b.id),
            "newest first, ties by id"
        );
    }

    // An exact fit ends with no cursor.
    let (all, next) = store.list_conversations(&who, 5, None).await.unwrap();
    assert_eq!(all.len(), 5);
    assert!(next.is_none());

    let bad = store
        .list_conversations(&who, 2, Some("garbage".into()))
        .await;
    assert!(matches!(bad, Err(StoreError::InvalidCursor)));
}

pub(super) async fn messages_order_and_recall(store: &Store) {
    let who = owner("msg");
    let conv = conversation(store, &who).await;
    let run_id = Uuid::new_v4();
    let interrupt_id = Uuid::new_v4();
    let contents = ["question", "wait, also this", "the answer"];
    let shapes = [
        (MessageRole::User, MessageKind::Query, None, None),
        (
            MessageRole::User,
            MessageKind::Interrupt,
            Some(interrupt_id),
            None,
        ),
    ];
    for ((role, kind, id, run), content) in shapes.into_iter().zip(contents) {
        let new = NewMessage {
            id,
            conversation_id: conv,
            role,
            kind,
            content: content.into(),
            run_id: run,
            images: Vec::new(),
        };
        store.add_message(new).await.unwrap();
    }
    let answer = NewMessage {
        id: None,
        conversation_id: conv,
        role: MessageRole::Assistant,
        kind: MessageKind::Answer,
        content: contents[2].into(),
        run_id: Some(run_id),
        images: Vec::new(),
    };
    let stored = store.add_message(answer).await.unwrap();

    let list = store.list_messages(conv).await.unwrap();
    assert_eq!(
        list.iter().map(|m| m.content.as_str()).collect::<Vec<_>>(),
        contents
    );
    assert_eq!(list[1].id, interrupt_id);
    assert_eq!(list[2], stored);
    assert_eq!(list[2].run_id, Some(run_id));
    let wire = serde_json::to_value(views::Message::from(list[2].clone())).unwrap();
    assert_eq!(
        keys(&wire),
        ["content", "created_at", "id", "kind", "role", "run_id"]
    );
    assert_eq!(wire["run_id"], json!(run_id.to_string()));

    assert!(!store
        .delete_message(Uuid::new_v4(), interrupt_id)
        .await
        .unwrap());
    assert!(store.delete_message(conv, interrupt_id).await.unwrap());
    assert!(!store.delete_message(conv, interrupt_id).await.unwrap());
    let left: Vec<_> = store
        .list_messages(conv)
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.kind)
        .collect();
    assert_eq!(left, [MessageKind::Query, MessageKind::Answer]);
    // A role other than user/assistant cannot be written: `MessageRole` has no such value, and
    // a stored one reads back as corrupt (`store::models` tests).
}

/// Adds a message of `kind` with `content` to `conv`.
async fn say(store: &Store, conv: Uuid, kind: MessageKind, content: &str) -> Uuid {
    let role = if kind == MessageKind::Answer {
        MessageRole::Assistant
    } else {
        MessageRole::User
    };
    let new = NewMessage {
        id: None,
        conversation_id: conv,
        role,
        kind,
        content: content.into(),
        run_id: None,
        images: Vec::new(),
    };
    store.add_message(new).await.unwrap().id
}

/// The ids `owner` finds for `q` (split on whitespace), following every page of `limit`.
async fn found(store: &Store, owner: &str, q: &str, limit: u32) -> Vec<Uuid> {
    let words: Vec<String> = q.split_whitespace().map(String::from).collect();
    let (mut ids, mut cursor) = (Vec::new(), None);
    loop {
        let (items, next) = store
            .search_conversations(owner, &words, limit, cursor)
            .await
            .unwrap();
        ids.extend(items.iter().map(|c| c.id));
        match next {
            Some(c) => cursor = Some(c),
            None => return ids,
        }
    }
}

pub(super) async fn conversations_search(store: &Store) {
    let who = owner("search");
    let titled = store
        .create_conversation(
            &who,
            NewConversation {
                title: Some("Trip to Kyoto".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap()
        .id;
    let old = conversation(store, &who).await;
    say(
        store,
        old,
        MessageKind::Query,
        "What is the capital of Japan?",
    )
    .await;
    say(
        store,
        old,
        MessageKind::Answer,
        "Tokyo; Kyoto was the capital before 1869. 100% sure.",
    )
    .await;
    let newer = conversation(store, &who).await;
    say(store, newer, MessageKind::Query, "Plan a trip").await;
    let wait = say(store, newer, MessageKind::Interrupt, "with a stop in Osaka").await;
    for _ in 0..3 {
        let filler = conversation(store, &who).await;
        say(store, filler, MessageKind::Query, "unrelated 1000 words").await;
    }

    // A word only in an old answer, in another case, inside a longer word.
    assert_eq!(found(store, &who, "TOKYO", 10).await, [old]);
    assert_eq!(found(store, &who, "okyo", 10).await, [old]);
    // Title or message, newest first; every word must occur, in the title or any message.
    assert_eq!(found(store, &who, "kyoto", 10).await, [old, titled]);
    assert_eq!(found(store, &who, "trip osaka", 10).await, [newer]);
    assert_eq!(
        found(store, &who, "kyoto osaka", 10).await,
        Vec::<Uuid>::new()
    );
    // Words under three characters (no trigram) and LIKE's wildcards taken literally.
    assert_eq!(found(store, &who, "to 100%", 10).await, [old]);
    assert_eq!(found(store, &who, "10_0", 10).await, Vec::<Uuid>::new());
    assert_eq!(
        found(store, &who, "\"Japan?\"", 10).await,
        Vec::<Uuid>::new()
    );
    assert_eq!(found(store, &who, "Japan?", 10).await, [old]);
    // Pages of one, same order as the whole.
    assert_eq!(found(store, &who, "unrelated", 1).await.len(), 3);
    assert_eq!(
        found(store, &who, "a", 1).await,
        found(store, &who, "a", 50).await
    );
    // Another owner finds nothing; a recalled message is no longer found.
    assert!(found(store, &owner("other"), "tokyo", 10).await.is_empty());
    assert!(store.delete_message(newer, wait).await.unwrap());
    assert!(found(store, &who, "osaka", 10).await.is_empty());
    assert!(store.delete_conversation(&who, old).await.unwrap());
    assert!(found(store, &who, "tokyo", 10).await.is_empty());
    let bad = store
        .search_conversations(&who, &["x".into()], 2, Some("garbage".into()))
        .await;
    assert!(matches!(bad, Err(StoreError::InvalidCursor)));
}
