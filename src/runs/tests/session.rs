//! The session verbs: a run after another joins or forks, a facade's record is stored with
//! the run that carries it (or not at all), stop waits for the end, delete removes the run.

use super::*;
use crate::runs::session::{Ask, Thread};

fn ask(query: &str, record: Option<&str>) -> Ask {
    Ask {
        query: query.into(),
        record: record.map(str::to_string),
        ..Ask::default()
    }
}

#[tokio::test]
async fn after_the_latest_run_joins_after_an_older_one_forks() {
    let f = fixture().await;
    let conv = f.conversation("alice").await;
    f.llm.text("one");
    let first = f.start_in("alice", conv, "q1").await.unwrap();
    finished(&first).await;
    f.llm.text("two");
    let joined = f
        .runs
        .attach(
            "alice",
            Thread::After(first.id),
            ask("q2", Some("{\"a\":1}")),
        )
        .await
        .unwrap();
    assert_eq!(
        joined.live.conversation_id, conv,
        "the latest run's: joined"
    );
    finished(&joined.live).await;
    let (row, record) = f
        .runs
        .run_with_record("alice", joined.live.id)
        .await
        .unwrap();
    assert_eq!(record.as_deref(), Some("{\"a\":1}"), "stored with the run");
    assert_eq!(
        row.started_at, joined.started_at,
        "as stored: no read back needed"
    );
    // `first` is no longer the latest: a fork at it.
    f.llm.text("three");
    let forked = f
        .runs
        .attach("alice", Thread::After(first.id), ask("q3", None))
        .await
        .unwrap();
    assert_ne!(forked.live.conversation_id, conv);
    finished(&forked.live).await;
    let (_, record) = f
        .runs
        .run_with_record("alice", forked.live.id)
        .await
        .unwrap();
    assert_eq!(record, None);
    // Another tenant's run is not found.
    let foreign = f
        .runs
        .attach("bob", Thread::After(first.id), ask("q", None))
        .await;
    assert!(matches!(foreign, Err(RunError::NotFound)), "{foreign:?}");
}

#[tokio::test]
async fn after_a_running_run_is_refused_and_leaves_no_fork() {
    let f = fixture().await;
    let slow = f.slow_run("alice", Duration::from_secs(30)).await;
    let before = f
        .store
        .list_conversations("alice", 100, None)
        .await
        .unwrap()
        .0
        .len();
    let refused = f
        .runs
        .attach("alice", Thread::After(slow.id), ask("q", Some("{}")))
        .await;
    assert!(matches!(refused, Err(RunError::Active)), "{refused:?}");
    let after = f
        .store
        .list_conversations("alice", 100, None)
        .await
        .unwrap()
        .0
        .len();
    assert_eq!(before, after, "no fork left behind");
    f.runs.stop_and_wait("alice", slow.id).await.unwrap();
}

#[tokio::test]
async fn stop_waits_for_the_end_and_delete_removes_the_run() {
    let f = fixture().await;
    let slow = f.slow_run("alice", Duration::from_secs(30)).await;
    let foreign = f.runs.stop_and_wait("bob", slow.id).await;
    assert!(matches!(foreign, Err(RunError::NotFound)), "{foreign:?}");
    f.runs.stop_and_wait("alice", slow.id).await.unwrap();
    let row = f.store.get_run("alice", slow.id).await.unwrap().unwrap();
    assert_ne!(
        row.status,
        RunStatus::Running,
        "its end is stored on return"
    );
    // A finished run is left as it is.
    f.runs.stop_and_wait("alice", slow.id).await.unwrap();
    f.runs.delete_run("alice", slow.id).await.unwrap();
    assert!(f.store.get_run("alice", slow.id).await.unwrap().is_none());
    let again = f.runs.delete_run("alice", slow.id).await;
    assert!(matches!(again, Err(RunError::NotFound)), "{again:?}");
}
