//! What the writer stores: many concurrent runs contiguously, a run's end without waiting for
//! the interval, the terminal state and answer exactly once, a checkpoint in pieces whole.

use super::*;

on_both_backends!(
    via crate::persist::with_store;
    // Forty runs appending at once: on more than one thread.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    writer_persists_many_runs_contiguously,
    #[tokio::test]
    a_run_end_skips_the_tick_interval,
    #[tokio::test]
    terminal_state_written_once,
    #[tokio::test]
    a_checkpoint_in_pieces_is_stored_whole,
);

async fn writer_persists_many_runs_contiguously(store: Store) {
    let writer = EventWriter::new(store.clone(), Duration::from_millis(2));
    let task = tokio::spawn(writer.clone().run());
    let mut handles = Vec::new();
    for r in 0..40u64 {
        let (conv, run) = new_run(&store).await;
        let writer = writer.clone();
        handles.push(tokio::spawn(async move {
            let log = Arc::new(EventLog::new());
            writer.register(run, log.clone());
            let n = 20 + r * 3;
            for i in 0..n {
                log.append("step", format!("{{\"i\":{i}}}"));
                writer.notify();
                if i % 7 == 0 {
                    tokio::task::yield_now().await;
                }
            }
            let done = done_event(log.len() as u64 + 1);
            let fin = final_state(conv, run, &format!("answer {r}"));
            assert!(writer.finish(run, Some((done, fin))).await.unwrap());
            log.append("done", "{\"status\":\"completed\"}".into());
            (conv, run, n + 1)
        }));
    }
    for h in handles {
        let (conv, run, total) = h.await.unwrap();
        let events = store.list_events(run, 0).await.unwrap();
        let seqs: Vec<i64> = events.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, (1..=total as i64).collect::<Vec<_>>(), "run {run}");
        assert_eq!(events.last().unwrap().name, "done");
        let row = store.get_run_any(run).await.unwrap().unwrap();
        assert_eq!(row.status, RunStatus::Completed);
        let answers: Vec<_> = store
            .list_messages(conv)
            .await
            .unwrap()
            .into_iter()
            .filter(|m| m.kind == MessageKind::Answer)
            .collect();
        assert_eq!(answers.len(), 1);
    }
    writer.stop();
    task.await.unwrap();
}

/// A run's end is written right after the write in progress, not an `interval` later: with
/// an hour between ticks, the final write of a run whose events were just written still
/// completes (the bound below is far from both the hour and any real write time).
async fn a_run_end_skips_the_tick_interval(store: Store) {
    let writer = EventWriter::new(store.clone(), Duration::from_secs(3600));
    let task = tokio::spawn(writer.clone().run());
    let (conv, run) = new_run(&store).await;
    let log = Arc::new(EventLog::new());
    writer.register(run, log.clone());
    log.append("start", "{}".into());
    writer.notify();
    // The first tick writes `start` (no wait before a first tick); the writer then waits.
    let store = &store;
    let written = eventually("the first tick wrote `start`", || async move {
        let n = store.list_events(run, 0).await.unwrap().len();
        (n >= 1).then_some(n)
    })
    .await;
    assert_eq!(written, 1, "the first tick wrote `start`");
    log.append("step", "{}".into());
    writer.notify();
    let fin = final_state(conv, run, "bye");
    let finished = tokio::time::timeout(
        Duration::from_secs(120),
        writer.finish(run, Some((done_event(3), fin))),
    )
    .await
    .expect("the final write waited for the next tick");
    assert!(finished.unwrap());
    assert_eq!(event_names(store, run).await, ["start", "step", "done"]);
    writer.stop();
    task.abort();
}

async fn terminal_state_written_once(store: Store) {
    let (conv, run) = new_run(&store).await;
    let batch = RunBatch {
        ceiling: None,
        checkpoint: None,
        run_id: run,
        events: vec![
            StoredEvent {
                seq: 1,
                name: "start".into(),
                data: "{}".into(),
            },
            done_event(2),
        ],
        finish: Some(final_state(conv, run, "first")),
        epoch: None,
    };
    assert_eq!(
        store
            .write_runs(std::slice::from_ref(&batch))
            .await
            .unwrap(),
        [true]
    );
    // A retried or racing second write changes nothing.
    let mut second = batch.clone();
    second.finish = Some(FinalState {
        finish: RunFinish {
            status: RunStatus::Cancelled,
            ..final_state(conv, run, "").finish
        },
        ..final_state(conv, run, "second")
    });
    assert_eq!(store.write_runs(&[second]).await.unwrap(), [false]);
    let row = store.get_run_any(run).await.unwrap().unwrap();
    assert_eq!(row.status, RunStatus::Completed);
    let answers: Vec<String> = store
        .list_messages(conv)
        .await
        .unwrap()
        .into_iter()
        .filter(|m| m.kind == MessageKind::Answer)
        .map(|m| m.content)
        .collect();
    assert_eq!(answers, ["first"]);
    assert_eq!(store.list_events(run, 0).await.unwrap().len(), 2);
}

/// A checkpoint in pieces (chunks shared with the loop's lists) is stored as its whole JSON;
/// one sent with the run's end is not stored (the terminal state clears it).
async fn a_checkpoint_in_pieces_is_stored_whole(store: Store) {
    let (conv, run) = new_run(&store).await;
    let items: Vec<String> = (0..2_000)
        .map(|i| format!("item {i} {}", "x".repeat(40)))
        .collect();
    let mut json = CheckpointJson::from("{\"items\":".to_string());
    JsonList::default().write(&items, &mut json).unwrap();
    json.push_str("}");
    assert!(json.own_len() < json.len() / 2, "in shared pieces");
    let batch = RunBatch {
        run_id: run,
        events: vec![StoredEvent {
            seq: 1,
            name: "start".into(),
            data: "{}".into(),
        }],
        ceiling: None,
        checkpoint: Some(Arc::new(json.clone())),
        finish: None,
        epoch: None,
    };
    let written = store.write_runs(std::slice::from_ref(&batch)).await;
    assert_eq!(written.unwrap(), [false]);
    let stored = store.run_checkpoint(run).await.unwrap().unwrap();
    assert_eq!(stored, json.join());
    let value: serde_json::Value = serde_json::from_str(&stored).unwrap();
    assert_eq!(value["items"].as_array().map(Vec::len), Some(2_000));
    let end = RunBatch {
        events: vec![done_event(2)],
        finish: Some(final_state(conv, run, "answer")),
        ..batch
    };
    assert_eq!(store.write_runs(&[end]).await.unwrap(), [true]);
    assert_eq!(store.run_checkpoint(run).await.unwrap(), None);
}
