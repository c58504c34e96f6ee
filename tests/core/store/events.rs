//! The event log, concurrent appends, the audit trail, artifacts and the delete cascade.

use super::*;

pub(super) async fn events_log(store: &Store) {
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

pub(super) async fn concurrent_event_appends(store: &Store) {
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

pub(super) async fn audit_rows(store: &Store) {
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

pub(super) async fn artifacts_round_trip(store: &Store) {
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

pub(super) async fn delete_cascades(store: &Store) {
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
        images: Vec::new(),
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
