//! The store suite, written once against `&Store` and run on both backends.
//!
//! SQLite runs on a temp file. PostgreSQL runs on a fresh database from
//! [`run_on`](crate::support::backends::run_on), dropped afterwards (even when an assertion
//! fails). When PostgreSQL is unreachable the test FAILS, unless `REAGENT_SKIP_PG=1` is set in
//! the environment (for machines without it).

use std::collections::HashSet;

use reagent::agent::artifacts::ArtifactSink;
use reagent::agent::events::RunStatus;
use reagent::domain::{MessageKind, MessageRole, Mode};
use reagent::llm::Usage;
use reagent::server::views;
use reagent::store::{
    AuditRow, NewConversation, NewMessage, NewRun, RunFinish, Store, StoreError, StoredEvent,
};
use reagent::tools::Artifact;
use serde_json::{json, Value};
use uuid::Uuid;

use crate::support::backends::{run_on, Backend};

/// A fresh owner name, so the parts of the suite never see each other's rows.
fn owner(tag: &str) -> String {
    format!("{tag}-{}", Uuid::new_v4().simple())
}

fn keys(v: &Value) -> Vec<String> {
    let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
    k.sort();
    k
}

async fn conversation(store: &Store, owner: &str) -> Uuid {
    store
        .create_conversation(owner, NewConversation::default())
        .await
        .unwrap()
        .id
}

async fn run(store: &Store, owner: &str, conversation_id: Uuid) -> Uuid {
    let id = Uuid::new_v4();
    let new = NewRun {
        id,
        conversation_id,
        owner: owner.to_string(),
        mode: Mode::Native,
        model: "m".into(),
    };
    store.create_run(new).await.unwrap();
    id
}

/// Events `range` named `name`, with `data(seq)`.
fn numbered(
    name: &str,
    range: std::ops::RangeInclusive<i64>,
    data: impl Fn(i64) -> String,
) -> Vec<StoredEvent> {
    range
        .map(|seq| StoredEvent {
            seq,
            name: name.into(),
            data: data(seq),
        })
        .collect()
}

fn events(range: std::ops::RangeInclusive<i64>) -> Vec<StoredEvent> {
    numbered("step", range, |seq| format!("{{\"n\":{seq}}}"))
}

fn finish(status: RunStatus) -> RunFinish {
    RunFinish {
        status,
        iterations: 3,
        tool_calls: 2,
        usage: Usage {
            prompt_tokens: 10,
            completion_tokens: 5,
            total_tokens: 15,
            llm_calls: 2,
        },
        error: None,
    }
}

async fn suite(store: &Store) {
    store.ping().await.unwrap();
    conversations_crud_and_isolation(store).await;
    conversations_pagination(store).await;
    messages_order_and_recall(store).await;
    run_lifecycle(store).await;
    conversation_with_first_run(store).await;
    conversation_seeded_with_history(store).await;
    concurrent_starts(store).await;
    events_log(store).await;
    concurrent_event_appends(store).await;
    audit_rows(store).await;
    artifacts_round_trip(store).await;
    delete_cascades(store).await;
}

async fn conversations_crud_and_isolation(store: &Store) {
    let alice = owner("alice");
    let bob = owner("bob");
    let new = NewConversation {
        title: Some("first".into()),
        model: Some("gpt".into()),
        system_prompt: Some("be brief".into()),
        tools: Some(vec!["calculator".into(), "http_get".into()]),
        agent: Some("helper".into()),
        engine: Some(reagent::domain::Engine::Dag),
    };
    let created = store.create_conversation(&alice, new).await.unwrap();
    let got = store
        .get_conversation(&alice, created.id)
        .await
        .unwrap()
        .unwrap();
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
            "created_at",
            "engine",
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

    assert!(store
        .get_conversation(&bob, created.id)
        .await
        .unwrap()
        .is_none());
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
    assert!(store
        .get_conversation(&alice, created.id)
        .await
        .unwrap()
        .is_none());
    assert!(!store.delete_conversation(&alice, created.id).await.unwrap());
}

async fn conversations_pagination(store: &Store) {
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

async fn messages_order_and_recall(store: &Store) {
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

async fn run_lifecycle(store: &Store) {
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
    let c = store.get_conversation(&who, conv).await.unwrap().unwrap();
    assert_eq!(c.active_run_id, Some(id));
    assert!(store
        .running_runs()
        .await
        .unwrap()
        .iter()
        .any(|r| r.id == id));

    // One running run per conversation.
    let second = NewRun {
        id: Uuid::new_v4(),
        conversation_id: conv,
        owner: who.clone(),
        mode: Mode::Json,
        model: "m".into(),
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
    assert!(store
        .get_conversation(&who, conv)
        .await
        .unwrap()
        .unwrap()
        .active_run_id
        .is_none());
    assert!(!store
        .running_runs()
        .await
        .unwrap()
        .iter()
        .any(|r| r.id == id));

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
        json!({"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15, "llm_calls": 2})
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
async fn conversation_with_first_run(store: &Store) {
    let who = owner("first-run");
    let draft = Store::draft_conversation(
        &who,
        NewConversation {
            title: Some("hello".into()),
            model: Some("m".into()),
            system_prompt: Some("be brief".into()),
            tools: Some(vec!["echo".into()]),
            agent: None,
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
    };
    let query = |conversation_id: Uuid, run_id: Uuid| NewMessage {
        id: None,
        conversation_id,
        role: MessageRole::User,
        kind: MessageKind::Query,
        content: "hello there".into(),
        run_id: Some(run_id),
    };
    // Not stored until written.
    assert!(store
        .get_conversation(&who, draft.id)
        .await
        .unwrap()
        .is_none());
    store
        .create_conversation_with_run(&draft, new_run(run_id, draft.id), query(draft.id, run_id))
        .await
        .unwrap();
    let c = store
        .get_conversation(&who, draft.id)
        .await
        .unwrap()
        .unwrap();
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
    assert!(store
        .get_conversation(&who, orphan.id)
        .await
        .unwrap()
        .is_none());
    assert!(store.get_run(&who, bad_run).await.unwrap().is_none());
    // The same draft can still be stored properly afterwards.
    let good = Uuid::new_v4();
    store
        .create_conversation_with_run(&orphan, new_run(good, orphan.id), query(orphan.id, good))
        .await
        .unwrap();
    assert_eq!(
        store
            .get_conversation(&who, orphan.id)
            .await
            .unwrap()
            .unwrap()
            .active_run_id,
        Some(good)
    );
}

/// Starts arriving together are written together (group commit); one conflicting start among
/// them fails alone and the others are stored.
async fn concurrent_starts(store: &Store) {
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
        };
        let query = NewMessage {
            id: None,
            conversation_id,
            role: MessageRole::User,
            kind: MessageKind::Query,
            content: format!("query of {run_id}"),
            run_id: Some(run_id),
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
    let c = store.get_conversation(&who, busy).await.unwrap().unwrap();
    assert_eq!(c.active_run_id, Some(running));
    assert!(store.list_messages(busy).await.unwrap().is_empty());
}

async fn events_log(store: &Store) {
    let who = owner("events");
    let conv = conversation(store, &who).await;
    let id = run(store, &who, conv).await;
    assert_eq!(store.last_event_seq(id).await.unwrap(), 0);
    assert!(store.list_events(id, 0).await.unwrap().is_empty());
    store.append_events(id, &[]).await.unwrap();

    store.append_events(id, &events(1..=300)).await.unwrap();
    store.append_events(id, &events(301..=500)).await.unwrap();
    assert_eq!(store.last_event_seq(id).await.unwrap(), 500);
    let all = store.list_events(id, 0).await.unwrap();
    assert_eq!(all, events(1..=500));
    let tail = store.list_events(id, 450).await.unwrap();
    assert_eq!(tail.first().map(|e| e.seq), Some(451));
    assert_eq!(tail.len(), 50);
    assert!(store.list_events(id, 500).await.unwrap().is_empty());
    assert_eq!(
        store.list_events_page(id, 10, 5).await.unwrap(),
        events(11..=15)
    );

    // A retried batch overlapping stored events neither fails nor rewrites them.
    let mut retry = events(499..=501);
    retry[0].data = "{\"changed\":true}".into();
    store.append_events(id, &retry).await.unwrap();
    assert_eq!(store.last_event_seq(id).await.unwrap(), 501);
    assert_eq!(
        store.list_events(id, 498).await.unwrap()[0],
        events(499..=499)[0]
    );

    // Another run's log is separate.
    let other = run(store, &who, conversation(store, &who).await).await;
    store.append_events(other, &events(1..=3)).await.unwrap();
    assert_eq!(store.last_event_seq(other).await.unwrap(), 3);
    assert_eq!(store.list_events(id, 0).await.unwrap().len(), 501);
}

async fn concurrent_event_appends(store: &Store) {
    let who = owner("concurrent");
    let mut tasks = Vec::new();
    for _ in 0..6 {
        let store = store.clone();
        let who = who.clone();
        tasks.push(tokio::spawn(async move {
            let id = run(&store, &who, conversation(&store, &who).await).await;
            for start in (1..=100).step_by(10) {
                store
                    .append_events(id, &events(start..=start + 9))
                    .await
                    .unwrap();
            }
            id
        }));
    }
    for task in tasks {
        let id = task.await.unwrap();
        assert_eq!(store.list_events(id, 0).await.unwrap(), events(1..=100));
    }
}

async fn audit_rows(store: &Store) {
    let who = owner("audit");
    let conv = conversation(store, &who).await;
    let id = run(store, &who, conv).await;
    let at = chrono::DateTime::from_timestamp_micros(1_700_000_000_123_456).unwrap();
    let rows: Vec<AuditRow> = ["calculator", "http_get"]
        .iter()
        .enumerate()
        .map(|(i, tool)| AuditRow {
            run_id: id,
            conversation_id: conv,
            call_id: format!("call_{i}"),
            tool: tool.to_string(),
            arguments: json!({"expression": "1+1", "nested": {"i": i}}),
            result_size: 42 + i as i64,
            duration_ms: 7,
            outcome: if i == 0 { "ok".into() } else { "error".into() },
            at,
        })
        .collect();
    for row in &rows {
        store.insert_audit(row.clone()).await.unwrap();
    }
    assert_eq!(store.list_audit(id).await.unwrap(), rows);
    assert!(store.list_audit(Uuid::new_v4()).await.unwrap().is_empty());
}

async fn artifacts_round_trip(store: &Store) {
    let who = owner("art");
    let id = run(store, &who, conversation(store, &who).await).await;
    let data = vec![0u8, 1, 2, 255, 254, b'<', b'h'];
    let artifact = Artifact {
        name: "page.html".into(),
        mime_type: "text/html".into(),
        data: data.clone(),
    };
    let r = store.put_artifact(id, artifact.clone()).await.unwrap();
    assert_eq!(r.url, format!("/api/artifacts/{}", r.id));
    assert_eq!(
        (r.name.as_str(), r.mime_type.as_str(), r.size),
        ("page.html", "text/html", data.len())
    );

    let art_id = Uuid::parse_str(&r.id).unwrap();
    let got = store.get_artifact(&who, art_id).await.unwrap().unwrap();
    assert_eq!((got.id, got.run_id, got.data), (art_id, id, data));
    assert!(store
        .get_artifact("intruder", art_id)
        .await
        .unwrap()
        .is_none());
    assert!(store
        .get_artifact(&who, Uuid::new_v4())
        .await
        .unwrap()
        .is_none());

    assert!(matches!(
        store.put_artifact(Uuid::new_v4(), artifact.clone()).await,
        Err(StoreError::NotFound)
    ));

    // Through the engine's sink trait.
    let sink: &dyn ArtifactSink = store;
    let via_sink = sink.store(&id.to_string(), artifact.clone()).await.unwrap();
    let stored = store
        .get_artifact(&who, Uuid::parse_str(&via_sink.id).unwrap())
        .await
        .unwrap();
    assert_eq!(stored.unwrap().name, "page.html");
    assert!(sink.store("not-a-uuid", artifact).await.is_err());
}

async fn delete_cascades(store: &Store) {
    let who = owner("cascade");
    let conv = conversation(store, &who).await;
    let id = run(store, &who, conv).await;
    let msg = NewMessage {
        id: None,
        conversation_id: conv,
        role: MessageRole::User,
        kind: MessageKind::Query,
        content: "q".into(),
        run_id: Some(id),
    };
    store.add_message(msg).await.unwrap();
    store.append_events(id, &events(1..=5)).await.unwrap();
    let audit = AuditRow {
        run_id: id,
        conversation_id: conv,
        call_id: "c".into(),
        tool: "t".into(),
        arguments: json!({}),
        result_size: 0,
        duration_ms: 0,
        outcome: "ok".into(),
        at: chrono::Utc::now(),
    };
    store.insert_audit(audit).await.unwrap();
    let artifact = Artifact {
        name: "a".into(),
        mime_type: "text/plain".into(),
        data: b"x".to_vec(),
    };
    let art = store.put_artifact(id, artifact).await.unwrap();

    assert!(store.delete_conversation(&who, conv).await.unwrap());
    assert!(store.list_messages(conv).await.unwrap().is_empty());
    assert!(store.get_run_any(id).await.unwrap().is_none());
    assert!(store.list_events(id, 0).await.unwrap().is_empty());
    assert_eq!(store.last_event_seq(id).await.unwrap(), 0);
    assert!(store.list_audit(id).await.unwrap().is_empty());
    let art_id = Uuid::parse_str(&art.id).unwrap();
    assert!(store.get_artifact(&who, art_id).await.unwrap().is_none());
}

#[tokio::test]
async fn sqlite_suite_creates_file_and_survives_restart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nested").join("deeper").join("reagent.db");
    assert!(!path.parent().unwrap().exists());
    let url = format!("sqlite://{}", path.display());

    let store = Store::connect(&url).await.unwrap();
    assert!(path.exists(), "connect creates the directory and the file");
    assert_eq!(store.backend(), "sqlite");
    suite(&store).await;

    let who = owner("restart");
    let conv = store
        .create_conversation(
            &who,
            NewConversation {
                title: Some("kept".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let id = run(&store, &who, conv.id).await;
    store.append_events(id, &events(1..=3)).await.unwrap();
    let wal = path.with_file_name("reagent.db-wal");
    assert!(wal.exists(), "WAL journal mode");
    store.close().await;

    // A restart: migrations are re-checked, data is still there, the run is still running.
    let store = Store::connect(&url).await.unwrap();
    assert_eq!(
        store
            .get_conversation(&who, conv.id)
            .await
            .unwrap()
            .unwrap()
            .title
            .as_deref(),
        Some("kept")
    );
    assert_eq!(store.list_events(id, 0).await.unwrap(), events(1..=3));
    assert!(store
        .running_runs()
        .await
        .unwrap()
        .iter()
        .any(|r| r.id == id));
    store.close().await;
}

/// Fills a database migrated to the first schema only (events keyed by the run's UUID) with one
/// conversation and two runs of four events each, interleaved as the shared writer stored them.
macro_rules! first_schema_rows {
    ($pool:expr, $conv:expr, $runs:expr) => {{
        sqlx::query(
            "INSERT INTO conversations (id, owner, created_at, updated_at) \
             VALUES ($1, 'old', 1, 1)",
        )
        .bind($conv.to_string())
        .execute($pool)
        .await
        .unwrap();
        for (i, run) in $runs.iter().enumerate() {
            sqlx::query(
                "INSERT INTO runs (id, conversation_id, owner, status, mode, model, started_at) \
                 VALUES ($1, $2, 'old', 'completed', 'native', 'm', $3)",
            )
            .bind(run.to_string())
            .bind($conv.to_string())
            .bind(i as i64)
            .execute($pool)
            .await
            .unwrap();
        }
        for seq in 1..=4i64 {
            for run in $runs.iter() {
                sqlx::query(
                    "INSERT INTO events (run_id, seq, name, data) VALUES ($1, $2, 'step', $3)",
                )
                .bind(run.to_string())
                .bind(seq)
                .bind(format!("{{\"n\":{seq}}}"))
                .execute($pool)
                .await
                .unwrap();
            }
        }
    }};
}

/// Rows left in `events` and `run_keys`.
macro_rules! event_rows_left {
    ($pool:expr) => {{
        let mut left = 0i64;
        for table in ["events", "run_keys"] {
            let n: i64 = sqlx::query_scalar(&format!("SELECT COUNT(*) FROM {table}"))
                .fetch_one($pool)
                .await
                .unwrap();
            left += n;
        }
        left
    }};
}

/// A copy of the backend's first migration alone, for a database as the first release left it.
fn first_schema_only(dir: &std::path::Path, backend: &str) -> std::path::PathBuf {
    let first = dir.join(format!("first-schema-{backend}"));
    std::fs::create_dir(&first).unwrap();
    let initial = "20240601000000_initial.sql";
    std::fs::copy(
        format!("migrations/{backend}/{initial}"),
        first.join(initial),
    )
    .unwrap();
    first
}

/// After the migration to run keys (the store was connected to a database filled by
/// `first_schema_rows!`): every event is still there, runs keep working, new runs get keys, and
/// deleting the conversation takes the events with it.
async fn migrated_events_survive(store: &Store, conv: Uuid, runs: [Uuid; 2]) {
    for run in runs {
        assert_eq!(store.list_events(run, 0).await.unwrap(), events(1..=4));
        assert_eq!(store.last_event_seq(run).await.unwrap(), 4);
    }
    store.append_events(runs[0], &events(4..=6)).await.unwrap();
    assert_eq!(store.list_events(runs[0], 0).await.unwrap(), events(1..=6));
    let fresh = run(store, "old", conv).await;
    store.append_events(fresh, &events(1..=2)).await.unwrap();
    assert_eq!(store.list_events(fresh, 0).await.unwrap(), events(1..=2));
    assert!(store.delete_conversation("old", conv).await.unwrap());
    for run in [runs[0], runs[1], fresh] {
        assert!(store.list_events(run, 0).await.unwrap().is_empty());
    }
}

/// The whole migration case on one backend: a database at the first schema, filled, then
/// opened by the store, checked, and counted after the delete.
macro_rules! run_key_migration_case {
    ($pool:ty, $url:expr, $backend:expr) => {{
        let dir = tempfile::tempdir().unwrap();
        let pool = <$pool>::connect($url).await.unwrap();
        let first = first_schema_only(dir.path(), $backend);
        let migrator = sqlx::migrate::Migrator::new(first.as_path()).await.unwrap();
        migrator.run(&pool).await.unwrap();
        let (conv, runs) = (Uuid::new_v4(), [Uuid::new_v4(), Uuid::new_v4()]);
        first_schema_rows!(&pool, conv, runs);
        pool.close().await;

        let store = Store::connect($url).await.unwrap();
        migrated_events_survive(&store, conv, runs).await;
        store.close().await;
        // Gone, not merely unreachable: the rows went with their runs.
        let pool = <$pool>::connect($url).await.unwrap();
        assert_eq!(event_rows_left!(&pool), 0);
        pool.close().await;
    }};
}

#[tokio::test]
async fn sqlite_events_survive_the_run_key_migration() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}?mode=rwc", dir.path().join("old.db").display());
    run_key_migration_case!(sqlx::SqlitePool, &url, "sqlite");
}

#[tokio::test]
async fn postgres_events_survive_the_run_key_migration() {
    run_on(Backend::Postgres, |url| async move {
        run_key_migration_case!(sqlx::PgPool, &url, "postgres");
    })
    .await;
}

/// An answer's deltas as the engine logs them.
fn deltas(range: std::ops::RangeInclusive<i64>) -> Vec<StoredEvent> {
    numbered("answer", range, |seq| {
        format!("{{\"type\":\"delta\",\"content\":\"t{seq}\"}}")
    })
}

/// Rows in `events` (several events may share one).
macro_rules! event_rows {
    ($pool:expr) => {
        sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM events")
            .fetch_one($pool)
            .await
            .unwrap()
    };
}

/// Consecutive events of one name share a row and read back one by one, whatever the retries.
macro_rules! packed_events_case {
    ($pool:ty, $url:expr) => {{
        let store = Store::connect($url).await.unwrap();
        let pool = <$pool>::connect($url).await.unwrap();
        let who = owner("packed");
        let id = run(&store, &who, conversation(&store, &who).await).await;

        store.append_events(id, &deltas(1..=10)).await.unwrap();
        assert_eq!(store.list_events(id, 0).await.unwrap(), deltas(1..=10));
        assert_eq!(event_rows!(&pool), 1);

        // A batch retried after an ambiguous commit, with the events that arrived since: the
        // stored row is extended, nothing is lost or doubled.
        store.append_events(id, &deltas(1..=20)).await.unwrap();
        assert_eq!(store.list_events(id, 0).await.unwrap(), deltas(1..=20));
        assert_eq!(store.last_event_seq(id).await.unwrap(), 20);
        assert_eq!(event_rows!(&pool), 1);

        // A stored event is never rewritten.
        let mut changed = deltas(1..=20);
        changed[2].data = "{\"changed\":true}".into();
        store.append_events(id, &changed).await.unwrap();
        assert_eq!(store.list_events(id, 0).await.unwrap(), deltas(1..=20));

        // Overlapping from another start: read back once each.
        store.append_events(id, &deltas(15..=30)).await.unwrap();
        assert_eq!(store.list_events(id, 0).await.unwrap(), deltas(1..=30));
        assert_eq!(store.last_event_seq(id).await.unwrap(), 30);
        assert_eq!(event_rows!(&pool), 2);

        // Resuming inside a row.
        assert_eq!(
            store.list_events_page(id, 16, 3).await.unwrap(),
            deltas(17..=19)
        );
        assert_eq!(store.list_events(id, 29).await.unwrap(), deltas(30..=30));
        assert_eq!(
            store.list_events_page(id, 0, 25).await.unwrap(),
            deltas(1..=25)
        );

        // Data with a newline (not one-line JSON) keeps a row of its own and reads back as is.
        let mut mixed = vec![StoredEvent {
            seq: 31,
            name: "answer".into(),
            data: "two\nlines".into(),
        }];
        mixed.extend(deltas(32..=33));
        store.append_events(id, &mixed).await.unwrap();
        assert_eq!(store.list_events(id, 30).await.unwrap(), mixed);
        assert_eq!(event_rows!(&pool), 4);

        pool.close().await;
        store.close().await;
    }};
}

#[tokio::test]
async fn sqlite_packs_consecutive_events() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!(
        "sqlite://{}?mode=rwc",
        dir.path().join("packed.db").display()
    );
    packed_events_case!(sqlx::SqlitePool, &url);
}

#[tokio::test]
async fn postgres_packs_consecutive_events() {
    run_on(Backend::Postgres, |url| async move {
        packed_events_case!(sqlx::PgPool, &url);
    })
    .await;
}

#[tokio::test]
async fn sqlite_in_memory_works() {
    let store = Store::connect("sqlite::memory:").await.unwrap();
    let who = owner("mem");
    let id = conversation(&store, &who).await;
    assert!(store.get_conversation(&who, id).await.unwrap().is_some());
}

#[tokio::test]
async fn unsupported_url_is_rejected() {
    assert!(matches!(
        Store::connect("mysql://x").await,
        Err(StoreError::UnsupportedUrl)
    ));
}

#[tokio::test]
async fn postgres_suite() {
    run_on(Backend::Postgres, |url| async move {
        let store = Store::connect(&url).await.unwrap();
        assert_eq!(store.backend(), "postgres");
        suite(&store).await;
        store.close().await;
        // Reconnecting re-runs the migrator over an up-to-date schema.
        let again = Store::connect(&url).await.unwrap();
        again.ping().await.unwrap();
        again.close().await;
    })
    .await;
}

/// A conversation seeded with earlier turns (the OpenAI-compatible API's request history):
/// the turns come before the query, in order, stored in the run start's transaction.
async fn conversation_seeded_with_history(store: &Store) {
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
    let c = store
        .get_conversation(&who, draft.id)
        .await
        .unwrap()
        .unwrap();
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
