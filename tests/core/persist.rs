//! The shared event writer ([`EventWriter`]) and the store's one-transaction batch write
//! ([`Store::write_runs`]), on SQLite and on a fresh PostgreSQL database (`REAGENT_SKIP_PG=1`
//! skips the latter).
//!
//! Guarantees checked:
//! - many runs appending concurrently: every event stored, ids 1..n per run, `done` last, the
//!   terminal state and the answer stored with it (`writer_persists_many_runs_contiguously`);
//! - the terminal state and answer are written exactly once (`terminal_state_written_once`);
//! - a run whose rows cannot be written does not stall the others, and its waiter gets an
//!   error instead of hanging (`a_failing_run_does_not_block_the_others`);
//! - stopping the writer flushes the events of runs that never finished
//!   (`stop_flushes_unfinished_runs`).

use std::sync::Arc;
use std::time::Duration;

use reagent::agent::events::RunStatus;
use reagent::domain::{MessageKind, MessageRole, Mode};
use reagent::llm::Usage;
use reagent::runs::persist::{EventWriter, Fence, PersistError};
use reagent::runs::EventLog;
use reagent::store::{
    FinalState, NewConversation, NewMessage, NewRun, RunBatch, RunFinish, Store, StoredEvent,
    Written,
};
use uuid::Uuid;

use crate::support::backends::{run_on, Backend};
use crate::support::eventually;

/// Runs `f` on a store over a fresh database of `backend`, closed afterwards.
async fn with_store<F, Fut>(backend: Backend, f: F)
where
    F: FnOnce(Store) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    run_on(backend, |url| async move {
        let store = Store::connect(&url).await.unwrap();
        f(store.clone()).await;
        store.close().await;
    })
    .await;
}

/// A conversation with one running run.
async fn new_run(store: &Store) -> (Uuid, Uuid) {
    let conv = store
        .create_conversation("", NewConversation::default())
        .await
        .unwrap()
        .id;
    let run = Uuid::new_v4();
    store
        .create_run_with_query(
            NewRun {
                id: run,
                conversation_id: conv,
                owner: String::new(),
                mode: Mode::Json,
                model: "m".into(),
            },
            NewMessage {
                id: None,
                conversation_id: conv,
                role: MessageRole::User,
                kind: MessageKind::Query,
                content: "q".into(),
                run_id: Some(run),
            },
        )
        .await
        .unwrap();
    (conv, run)
}

fn final_state(conv: Uuid, run: Uuid, answer: &str) -> FinalState {
    FinalState {
        finish: RunFinish {
            status: RunStatus::Completed,
            iterations: 1,
            tool_calls: 0,
            usage: Usage::default(),
            error: None,
        },
        answer: Some(NewMessage {
            id: None,
            conversation_id: conv,
            role: MessageRole::Assistant,
            kind: MessageKind::Answer,
            content: answer.into(),
            run_id: Some(run),
        }),
    }
}

fn done_event(seq: u64) -> StoredEvent {
    StoredEvent {
        seq: seq as i64,
        name: "done".into(),
        data: "{\"status\":\"completed\"}".into(),
    }
}

async fn many_runs(store: Store) {
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writer_persists_many_runs_contiguously_sqlite() {
    with_store(Backend::Sqlite, many_runs).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writer_persists_many_runs_contiguously_postgres() {
    with_store(Backend::Postgres, many_runs).await;
}

/// A run's end is written right after the write in progress, not an `interval` later: with
/// an hour between ticks, the final write of a run whose events were just written still
/// completes (the bound below is far from both the hour and any real write time).
async fn ends_skip_the_interval(store: Store) {
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
    let names: Vec<String> = store
        .list_events(run, 0)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(names, ["start", "step", "done"]);
    writer.stop();
    task.abort();
}

#[tokio::test]
async fn a_run_end_skips_the_tick_interval_sqlite() {
    with_store(Backend::Sqlite, ends_skip_the_interval).await;
}

#[tokio::test]
async fn a_run_end_skips_the_tick_interval_postgres() {
    with_store(Backend::Postgres, ends_skip_the_interval).await;
}

async fn once(store: Store) {
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

#[tokio::test]
async fn terminal_state_written_once_sqlite() {
    with_store(Backend::Sqlite, once).await;
}

#[tokio::test]
async fn terminal_state_written_once_postgres() {
    with_store(Backend::Postgres, once).await;
}

/// Registers a log for `run` with the writer, holding one `start` event.
fn follow(writer: &EventWriter, run: Uuid) -> Arc<EventLog> {
    let log = Arc::new(EventLog::new());
    writer.register(run, log.clone());
    log.append("start", "{}".into());
    log
}

async fn failing(store: Store) {
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
async fn vanished(store: Store) {
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
async fn a_vanished_run_is_dropped_quietly_sqlite() {
    with_store(Backend::Sqlite, vanished).await;
}

#[tokio::test]
async fn a_vanished_run_is_dropped_quietly_postgres() {
    with_store(Backend::Postgres, vanished).await;
}

#[tokio::test]
async fn a_failing_run_does_not_block_the_others_sqlite() {
    with_store(Backend::Sqlite, failing).await;
}

#[tokio::test]
async fn a_failing_run_does_not_block_the_others_postgres() {
    with_store(Backend::Postgres, failing).await;
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

/// Fencing (SPEC §11): once another instance took the run (a new epoch), a batch written
/// under the old epoch stores nothing — no events, no checkpoint, no terminal state — and is
/// answered `Fenced`; the taker's batch under the new epoch is stored.
async fn fenced(store: Store) {
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
        checkpoint: Some("{}".into()),
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

#[tokio::test]
async fn a_fenced_batch_writes_nothing_sqlite() {
    with_store(Backend::Sqlite, fenced).await;
}

#[tokio::test]
async fn a_fenced_batch_writes_nothing_postgres() {
    with_store(Backend::Postgres, fenced).await;
}

/// The writer under fencing: once the run's epoch moved on, its next batch is refused; the
/// writer counts it, cancels the run's `lost` token, writes nothing more of it (a later event
/// neither), and tells the run's final write `Fenced`. Another run's writes go on.
async fn writer_fenced(store: Store) {
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
    let names: Vec<String> = store
        .list_events(run, 0)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(names, ["start"], "nothing after the takeover");
    assert_eq!(
        store.get_run_any(run).await.unwrap().unwrap().status,
        RunStatus::Running
    );
    writer.stop();
    task.abort();
}

#[tokio::test]
async fn the_writer_stops_a_fenced_run_sqlite() {
    with_store(Backend::Sqlite, writer_fenced).await;
}

#[tokio::test]
async fn the_writer_stops_a_fenced_run_postgres() {
    with_store(Backend::Postgres, writer_fenced).await;
}
