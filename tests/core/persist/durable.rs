//! Durable checkpoints ([`EventWriter::checkpoint_durably`]), the record a call to a tool that
//! is not idempotent waits for: committed before it returns without waiting for the writer's
//! tick, with the run's events up to it; refused under a lost lease.

use super::*;

on_both_backends!(
    via crate::persist::with_store;
    #[tokio::test]
    a_durable_checkpoint_is_stored_when_it_returns,
    #[tokio::test]
    a_durable_checkpoint_is_refused_once_another_instance_took_the_run,
);

/// A writer whose tick is far longer than any test: whatever it stores here, it stores at once.
fn slow_writer(store: &Store) -> Arc<EventWriter> {
    EventWriter::new(store.clone(), Duration::from_secs(3600))
}

fn in_flight(call: &str) -> CheckpointJson {
    CheckpointJson::from(format!(r#"{{"in_flight":[{{"call_id":"{call}"}}]}}"#))
}

/// Returned means stored: the checkpoint and the events before it are in the database when
/// `checkpoint_durably` returns, the second one too although the tick is an hour.
async fn a_durable_checkpoint_is_stored_when_it_returns(store: Store) {
    let writer = slow_writer(&store);
    let task = tokio::spawn(writer.clone().run());
    let (_, run) = new_run(&store).await;
    let log = Arc::new(EventLog::new());
    let lost = tokio_util::sync::CancellationToken::new();
    writer.register_fenced(run, log.clone(), Some(Fence { epoch: 1, lost }));
    for (i, call) in ["c1", "c2"].into_iter().enumerate() {
        log.append("step", format!(r#"{{"type":"tool_start","n":{i}}}"#));
        let after = log.len() as u64;
        let json = in_flight(call);
        writer
            .checkpoint_durably(run, after, json.clone())
            .await
            .unwrap();
        assert_eq!(store.run_checkpoint(run).await.unwrap(), Some(json.join()));
        assert_eq!(store.list_events(run, 0).await.unwrap().len(), i + 1);
    }
    writer.stop();
    task.await.unwrap();
}

/// A run another instance took (a new lease epoch): its durable checkpoint is refused
/// (`Fenced`, so its calls are not made), nothing of it is stored, the run's `lost` token is
/// cancelled, and any later one is refused at once.
async fn a_durable_checkpoint_is_refused_once_another_instance_took_the_run(store: Store) {
    let writer = slow_writer(&store);
    let task = tokio::spawn(writer.clone().run());
    let (_, run) = new_run(&store).await;
    let log = Arc::new(EventLog::new());
    let lost = tokio_util::sync::CancellationToken::new();
    let fence = Fence {
        epoch: 1,
        lost: lost.clone(),
    };
    writer.register_fenced(run, log.clone(), Some(fence));
    let first = in_flight("c1");
    writer
        .checkpoint_durably(run, 0, first.clone())
        .await
        .unwrap();
    store
        .take_run(run, "b", Duration::from_secs(20))
        .await
        .unwrap()
        .unwrap();
    log.append("step", r#"{"type":"tool_start"}"#.into());
    let refused = writer
        .checkpoint_durably(run, log.len() as u64, in_flight("c2"))
        .await;
    assert!(matches!(refused, Err(PersistError::Fenced)), "{refused:?}");
    assert!(lost.is_cancelled());
    assert_eq!(store.run_checkpoint(run).await.unwrap(), Some(first.join()));
    assert!(store.list_events(run, 0).await.unwrap().is_empty());
    let again = writer.checkpoint_durably(run, 0, in_flight("c3")).await;
    assert!(matches!(again, Err(PersistError::Fenced)), "{again:?}");
    writer.stop();
    task.await.unwrap();
}
