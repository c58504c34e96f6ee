//! Runs the writer cannot finish: a failing one does not block the others, a vanished one is
//! dropped quietly, and stopping flushes the unfinished.

use super::*;

on_both_backends!(
    via crate::persist::with_store;
    #[tokio::test]
    a_vanished_run_is_dropped_quietly,
    #[tokio::test]
    a_failing_run_does_not_block_the_others,
);

/// Registers a log for `run` with the writer, holding one `start` event.
fn follow(writer: &EventWriter, run: Uuid) -> Arc<EventLog> {
    let log = Arc::new(EventLog::new());
    writer.register(run, log.clone());
    log.append("start", "{}".into());
    log
}

async fn a_failing_run_does_not_block_the_others(store: Store) {
    let writer = EventWriter::new(store.clone(), Duration::from_millis(1));
    let task = tokio::spawn(writer.clone().run());
    // Its answer names a conversation that does not exist, which breaks a foreign key: its
    // final write fails on every attempt.
    let (bad_conv, bad_run) = new_run(&store).await;
    let _bad_log = follow(&writer, bad_run);
    let mut bad_state = final_state(bad_conv, bad_run, "b");
    if let Some(answer) = bad_state.answer.as_mut() {
        answer.conversation_id = Uuid::new_v4();
    }
    let (conv, run) = new_run(&store).await;
    let _log = follow(&writer, run);
    writer.notify();
    let ok = writer.finish(run, Some((done_event(2), final_state(conv, run, "a"))));
    let bad = writer.finish(bad_run, Some((done_event(2), bad_state)));
    let (ok, bad) = tokio::time::timeout(Duration::from_secs(30), futures::future::join(ok, bad))
        .await
        .expect("a failing run must not hang the writer");
    assert!(ok.unwrap());
    assert!(matches!(bad, Err(PersistError::Failed(_))), "{bad:?}");
    assert_eq!(store.list_events(run, 0).await.unwrap().len(), 2);
    let row = store.get_run_any(bad_run).await.unwrap().unwrap();
    assert_eq!(
        row.status,
        RunStatus::Running,
        "nothing of the failed write is kept"
    );
    writer.stop();
    task.await.unwrap();
}

/// A run whose row is gone (its conversation was deleted while it ran) neither fails nor
/// blocks the writer: its events have nowhere to go and are dropped, and its end reports that
/// the run was no longer `running` in the database.
async fn a_vanished_run_is_dropped_quietly(store: Store) {
    let writer = EventWriter::new(store.clone(), Duration::from_millis(1));
    let task = tokio::spawn(writer.clone().run());
    let ghost = Uuid::new_v4();
    let _ghost_log = follow(&writer, ghost);
    let (conv, run) = new_run(&store).await;
    let _log = follow(&writer, run);
    writer.notify();
    let ok = writer.finish(run, Some((done_event(2), final_state(conv, run, "a"))));
    let gone = writer.finish(ghost, Some((done_event(2), final_state(conv, ghost, "b"))));
    let (ok, gone) = tokio::time::timeout(Duration::from_secs(30), futures::future::join(ok, gone))
        .await
        .expect("a vanished run must not hang the writer");
    assert!(ok.unwrap());
    assert!(!gone.unwrap());
    assert_eq!(store.list_events(run, 0).await.unwrap().len(), 2);
    assert!(store.list_events(ghost, 0).await.unwrap().is_empty());
    writer.stop();
    task.await.unwrap();
}

#[tokio::test]
async fn stop_flushes_unfinished_runs() {
    with_store(Backend::Sqlite, |store| async move {
        // A long interval: only `stop` makes the second write happen promptly.
        let writer = EventWriter::new(store.clone(), Duration::from_millis(50));
        let task = tokio::spawn(writer.clone().run());
        let (_, run) = new_run(&store).await;
        let log = Arc::new(EventLog::new());
        writer.register(run, log.clone());
        for _ in 0..5 {
            log.append("step", "{}".into());
            writer.notify();
        }
        writer.stop();
        tokio::time::timeout(Duration::from_secs(30), task)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(store.list_events(run, 0).await.unwrap().len(), 5);
        // After the writer stopped, finishing fails fast instead of hanging.
        let late = writer.finish(run, None).await;
        assert!(matches!(late, Err(PersistError::Stopped)), "{late:?}");
    })
    .await;
}
