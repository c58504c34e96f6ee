//! Runs that cannot finish normally: restart recovery fails those left running, and a panic
//! inside the agent still ends the run as failed with an answer.

use super::*;

#[tokio::test]
async fn recovery_fails_runs_left_running_and_closes_their_logs() {
    let f = fixture(ToolRegistry::new()).await;
    let conv = f
        .store
        .create_conversation("", NewConversation::default())
        .await
        .unwrap();
    let run_id = Uuid::new_v4();
    f.store
        .create_run(NewRun {
            id: run_id,
            conversation_id: conv.id,
            owner: "".into(),
            mode: Mode::Native,
            model: "default".into(),
            traceparent: None,
        })
        .await
        .unwrap();
    let start = StoredEvent {
        seq: 1,
        name: "start".into(),
        data: "{}".into(),
    };
    let step = StoredEvent {
        seq: 2,
        name: "step".into(),
        data: "{}".into(),
    };
    f.store.append_events(run_id, &[start, step]).await.unwrap();
    assert_eq!(f.runs.recover().await.unwrap().total(), 1);
    let run = f.store.get_run("", run_id).await.unwrap().unwrap();
    assert_eq!(run.status, RunStatus::Failed);
    assert_eq!(run.error.as_deref(), Some(RESTART_ERROR));
    let events = f.store.list_events(run_id, 0).await.unwrap();
    let seqs: Vec<i64> = events.iter().map(|e| e.seq).collect();
    // The tail is numbered above the block of ids the run was created with: a client may have
    // seen ids 3… before the crash that were never stored.
    let b = EVENT_ID_BLOCK;
    assert_eq!(seqs, [1, 2, b + 1, b + 2, b + 3, b + 4, b + 5]);
    let names: Vec<&str> = events.iter().map(|e| e.name.as_str()).collect();
    // The fallback answer: start, reset (of what a client may have seen), delta, done.
    assert_eq!(
        names,
        ["start", "step", "answer", "answer", "answer", "answer", "done"]
    );
    assert!(events.last().unwrap().data.contains(RESTART_ERROR));
    assert_eq!(f.runs.recover().await.unwrap().total(), 0, "idempotent");
    // The conversation accepts a new run.
    f.llm.text("ok");
    assert!(f.runs.start("", query(&conv, "again")).await.is_ok());
}

#[tokio::test]
async fn a_panic_inside_the_agent_still_ends_the_run_as_failed_with_an_answer() {
    let f = fixture_with(
        Arc::new(ScriptedLlm::native()),
        Arc::new(PanickingLlm),
        ToolRegistry::new(),
    )
    .await;
    let (conv, live) = f.new_run("alice", "hi").await;
    let events: Vec<_> = tokio::time::timeout(
        Duration::from_secs(10),
        live.log.subscribe(0).events.collect(),
    )
    .await
    .expect("the log of a run whose agent panicked is closed");
    let ids: Vec<u64> = events.iter().map(|e| e.id).collect();
    assert_eq!(ids, (1..=events.len() as u64).collect::<Vec<_>>());
    let names: Vec<&str> = events.iter().map(|e| e.name).collect();
    assert_eq!(names, ["start", "answer", "answer", "answer", "done"]);
    let done: serde_json::Value = serde_json::from_str(&events[4].data).unwrap();
    assert_eq!(done["status"], "failed");
    assert_eq!(done["error"], "internal error");
    assert!(done["answer"].as_str().unwrap().contains("internal error"));

    live.finished().await;
    let run = f.store.get_run("alice", live.id).await.unwrap().unwrap();
    assert_eq!(run.status, RunStatus::Failed);
    let stored = f.store.list_events(live.id, 0).await.unwrap();
    assert_eq!(stored.len(), events.len(), "every event persisted");
    assert_eq!(f.runs.active_runs(), 0);
    // The conversation is free for the next run.
    assert!(f.runs.start("alice", query(&conv, "again")).await.is_ok());
}
