use super::*;
use uuid::Uuid;

/// `PRAGMA data_version` of a connection changes when ANOTHER connection has committed.
async fn data_version<'c, E: sqlx::SqliteExecutor<'c>>(conn: E) -> i64 {
    sqlx::query_scalar("PRAGMA data_version")
        .fetch_one(conn)
        .await
        .expect("data_version")
}

/// Every write of a file database goes through the one writer connection, so its page
/// cache is never invalidated by another connection's commit (see `Store::writer`).
#[tokio::test]
async fn sqlite_writes_all_go_through_the_writer_connection() {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("sqlite://{}", dir.path().join("w.db").display());
    let store = Store::connect(&url).await.expect("connect");
    let writer = store.writer.clone().expect("a file database has a writer");
    let Backend::Sqlite(readers) = &store.backend else {
        panic!("sqlite backend");
    };
    // One reader connection held throughout (the value is per connection); the writer pool
    // has only one.
    let mut reader = readers.acquire().await.expect("reader");
    let writer_before = data_version(&writer).await;
    let reader_before = data_version(&mut *reader).await;

    let conv = store
        .create_conversation("o", NewConversation::default())
        .await
        .expect("conversation");
    let run = Uuid::new_v4();
    store
        .create_run(NewRun {
            id: run,
            conversation_id: conv.id,
            owner: "o".into(),
            mode: crate::domain::Mode::Native,
            model: "m".into(),
            traceparent: None,
        })
        .await
        .expect("run");
    let event = StoredEvent {
        seq: 1,
        name: "start".into(),
        data: "{}".into(),
    };
    store.append_events(run, &[event]).await.expect("events");
    store.touch_conversation(conv.id).await.expect("touch");
    assert_eq!(store.list_events(run, 0).await.expect("list").len(), 1);
    assert!(store
        .delete_conversation("o", conv.id)
        .await
        .expect("delete"));

    assert_eq!(
        data_version(&writer).await,
        writer_before,
        "another connection committed"
    );
    assert_ne!(
        data_version(&mut *reader).await,
        reader_before,
        "the reader saw no commit: the check cannot tell"
    );
    drop(reader);
    store.close().await;
}
