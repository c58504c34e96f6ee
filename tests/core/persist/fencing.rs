//! Fencing (docs/deployment.md): a batch under an old epoch writes nothing, and the writer stops a run
//! another instance took.

use super::*;

on_both_backends!(
    via crate::persist::with_store;
    #[tokio::test]
    a_fenced_batch_writes_nothing,
    #[tokio::test]
    the_writer_stops_a_fenced_run,
);

/// Scenarios given the database's URL, to open a second store on it.
mod by_url {
    use super::*;

    on_both_backends!(
        #[tokio::test]
        a_takeover_elsewhere_fences_a_run_already_verified,
    );
}

/// Fencing (docs/deployment.md): once another instance took the run (a new epoch), a batch written
/// under the old epoch stores nothing — no events, no checkpoint, no terminal state — and is
/// answered `Fenced`; the taker's batch under the new epoch is stored.
async fn a_fenced_batch_writes_nothing(store: Store) {
    let (conv, run) = new_run(&store).await;
    let ttl = Duration::from_secs(20);
    let taken = store.take_run(run, "b", ttl).await.unwrap().unwrap();
    assert_eq!(taken.epoch, 2, "created at epoch 1, taken at 2");
    let old = RunBatch {
        run_id: run,
        events: vec![StoredEvent {
            seq: 1,
            name: "start".into(),
            data: "{}".into(),
        }],
        ceiling: Some(5000),
        checkpoint: Some(Arc::new(CheckpointJson::from("{}".to_string()))),
        finish: None,
        epoch: Some(1),
    };
    assert_eq!(
        store
            .write_batches(std::slice::from_ref(&old))
            .await
            .unwrap(),
        [Written::Fenced]
    );
    let closing = RunBatch {
        events: vec![done_event(2)],
        finish: Some(final_state(conv, run, "old")),
        ..old.clone()
    };
    let new = RunBatch {
        epoch: Some(2),
        ceiling: None,
        checkpoint: None,
        ..old.clone()
    };
    // One transaction with both: the old owner's is refused, the new one's stored.
    let (_, other) = new_run(&store).await;
    let mixed = [
        closing,
        RunBatch {
            run_id: other,
            epoch: Some(1),
            ..new.clone()
        },
    ];
    assert_eq!(
        store.write_batches(&mixed).await.unwrap(),
        [Written::Fenced, Written::Stored(false)]
    );
    assert!(store.list_events(run, 0).await.unwrap().is_empty());
    assert_eq!(store.list_events(other, 0).await.unwrap().len(), 1);
    assert_eq!(store.run_checkpoint(run).await.unwrap(), None);
    assert!(store.event_ceiling(run).await.unwrap() < 5000);
    let row = store.get_run_any(run).await.unwrap().unwrap();
    assert_eq!(row.status, RunStatus::Running);
    assert_eq!(
        store.write_batches(&[new]).await.unwrap(),
        [Written::Stored(false)]
    );
    assert_eq!(store.list_events(run, 0).await.unwrap().len(), 1);
}

/// The writer under fencing: once the run's epoch moved on, its next batch is refused; the
/// writer counts it, cancels the run's `lost` token, writes nothing more of it (a later event
/// neither), and tells the run's final write `Fenced`. Another run's writes go on.
async fn the_writer_stops_a_fenced_run(store: Store) {
    let writer = EventWriter::new(store.clone(), Duration::from_millis(2));
    let task = tokio::spawn(writer.clone().run());
    let (conv, run) = new_run(&store).await;
    let (_, other) = new_run(&store).await;
    let lost = tokio_util::sync::CancellationToken::new();
    let log = Arc::new(EventLog::new());
    let fence = Fence {
        epoch: 1,
        lost: lost.clone(),
    };
    writer.register_fenced(run, log.clone(), Some(fence.clone()));
    let other_log = Arc::new(EventLog::new());
    writer.register_fenced(
        other,
        other_log.clone(),
        Some(Fence {
            epoch: 1,
            lost: tokio_util::sync::CancellationToken::new(),
        }),
    );
    log.append("start", "{}".into());
    writer.notify();
    let store = &store;
    eventually("`start` written under epoch 1", || async move {
        store.list_events(run, 0).await.unwrap().len() == 1
    })
    .await;
    store
        .take_run(run, "b", Duration::from_secs(20))
        .await
        .unwrap()
        .unwrap();
    log.append("step", "{}".into());
    other_log.append("start", "{}".into());
    writer.notify();
    tokio::time::timeout(Duration::from_secs(10), lost.cancelled())
        .await
        .expect("the refused write cancels `lost`");
    assert_eq!(writer.fenced_writes(), 1);
    log.append("step", "{}".into());
    writer.notify();
    let fin = final_state(conv, run, "bye");
    let end = writer.finish(run, Some((done_event(4), fin))).await;
    assert!(matches!(end, Err(PersistError::Fenced)), "{end:?}");
    eventually("the other run is written", || async move {
        store.list_events(other, 0).await.unwrap().len() == 1
    })
    .await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(
        event_names(store, run).await,
        ["start"],
        "nothing after the takeover"
    );
    assert_eq!(
        store.get_run_any(run).await.unwrap().unwrap().status,
        RunStatus::Running
    );
    writer.stop();
    task.abort();
}

/// A run whose epoch this store already verified (on SQLite it is not read again while no
/// epoch changed anywhere) is still fenced once another store, as another process would, took
/// it over: the epoch change is seen through the database, not through this store's memory.
pub(super) async fn a_takeover_elsewhere_fences_a_run_already_verified(url: String) {
    let owner = Store::connect(&url).await.unwrap();
    let other = Store::connect(&url).await.unwrap();
    let (_, run) = new_run(&owner).await;
    let batch = |seq| RunBatch {
        run_id: run,
        events: vec![StoredEvent {
            seq,
            name: "step".into(),
            data: "{}".into(),
        }],
        ceiling: None,
        checkpoint: None,
        finish: None,
        epoch: Some(1),
    };
    for seq in 1..=2 {
        let written = owner.write_batches(&[batch(seq)]).await.unwrap();
        assert_eq!(written, [Written::Stored(false)], "event {seq}");
    }
    other
        .take_run(run, "b", Duration::from_secs(20))
        .await
        .unwrap()
        .unwrap();
    let written = owner.write_batches(&[batch(3)]).await.unwrap();
    assert_eq!(written, [Written::Fenced]);
    assert_eq!(owner.list_events(run, 0).await.unwrap().len(), 2);
    owner.close().await;
    other.close().await;
}
