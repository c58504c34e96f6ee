//! A run's life: contiguous events persisted with its final state, one active run per
//! conversation (interrupts need one), cancel.

use super::*;

#[tokio::test]
async fn a_run_logs_contiguous_events_and_persists_them_with_its_final_state() {
    let f = fixture(ToolRegistry::new()).await;
    f.llm.text("brief");
    f.llm
        .push_stream(Turn::Stream(vec!["Hello ".into(), "world".into()], None));
    let (conv, live) = f.new_run("alice", "hi").await;
    let events: Vec<_> = live.log.subscribe(0).events.collect().await;
    let ids: Vec<u64> = events.iter().map(|e| e.id).collect();
    assert_eq!(ids, (1..=events.len() as u64).collect::<Vec<_>>());
    assert_eq!(events.first().unwrap().name, "start");
    assert_eq!(events.last().unwrap().name, "done");
    // Final state is stored before `done` is visible.
    let run = f.store.get_run("alice", live.id).await.unwrap().unwrap();
    assert_eq!(run.status, RunStatus::Completed);
    // Once the run is fully finished, the stored log equals the live one.
    tokio::time::timeout(Duration::from_secs(5), live.finished())
        .await
        .unwrap();
    let stored = f.store.list_events(live.id, 0).await.unwrap();
    let stored: Vec<(u64, String, String)> = stored
        .into_iter()
        .map(|e| (e.seq as u64, e.name, e.data))
        .collect();
    let live_log: Vec<(u64, String, String)> = events
        .iter()
        .map(|e| (e.id, e.name.to_string(), e.data.to_string()))
        .collect();
    assert_eq!(stored, live_log);
    let msgs = f.store.list_messages(conv.id).await.unwrap();
    let kinds: Vec<(&str, &str)> = msgs
        .iter()
        .map(|m| (m.kind.as_str(), m.content.as_str()))
        .collect();
    assert_eq!(kinds, [("query", "hi"), ("answer", "Hello world")]);
    // A finished run replays from the database.
    assert_eq!(f.runs.active_runs(), 0);
    let replay: Vec<u64> = f
        .runs
        .events("alice", live.id, 3)
        .await
        .unwrap()
        .map(|e| e.id)
        .collect()
        .await;
    assert_eq!(replay, (4..=events.len() as u64).collect::<Vec<_>>());
    assert!(matches!(
        f.runs.events("bob", live.id, 0).await,
        Err(RunError::NotFound)
    ));
}

#[tokio::test]
async fn one_active_run_per_conversation_and_interrupts_need_one() {
    let f = fixture(ToolRegistry::new()).await;
    f.llm.push(Turn::Reply(
        reagent::testing::scripted::response("slow", vec![]),
        Duration::from_millis(300),
    ));
    let conv = f
        .store
        .create_conversation("", NewConversation::default())
        .await
        .unwrap();
    assert!(matches!(
        f.runs.interrupt("", conv.id, "early".into()).await,
        Err(RunError::NoActiveRun)
    ));
    assert!(
        f.store.list_messages(conv.id).await.unwrap().is_empty(),
        "nothing stored"
    );
    let live = f.runs.start("", query(&conv, "first")).await.unwrap();
    assert!(matches!(
        f.runs.start("", query(&conv, "second")).await,
        Err(RunError::Active)
    ));
    let accepted = f
        .runs
        .interrupt("", conv.id, "also this".into())
        .await
        .unwrap();
    let (iid, run_id) = (accepted.id, accepted.run_id);
    assert_eq!(run_id, live.id);
    let events: Vec<_> = live.log.subscribe(0).events.collect().await;
    let done = &events.last().unwrap().data;
    // Drained (the final answer was discarded for it) or reported unprocessed, never lost.
    let step_seen = events.iter().any(|e| e.data.contains(&iid.to_string()));
    assert!(step_seen || done.contains(&iid.to_string()));
    let stored = f.store.list_messages(conv.id).await.unwrap();
    assert!(stored
        .iter()
        .any(|m| m.id == iid && m.kind == MessageKind::Interrupt));
    // The conversation is free again once `done` was emitted.
    f.llm.text("again");
    assert!(f.runs.start("", query(&conv, "third")).await.is_ok());
}

#[tokio::test]
async fn cancel_ends_the_run_as_cancelled_and_a_finished_run_cannot_be_cancelled() {
    let f = fixture(ToolRegistry::new()).await;
    f.llm.push(Turn::Reply(
        reagent::testing::scripted::response("never", vec![]),
        Duration::from_secs(30),
    ));
    let (_, live) = f.new_run("", "q").await;
    assert!(matches!(
        f.runs.cancel("someone-else", live.id).await,
        Err(RunError::NotFound)
    ));
    f.runs.cancel("", live.id).await.unwrap();
    let events: Vec<_> = tokio::time::timeout(
        Duration::from_secs(5),
        live.log.subscribe(0).events.collect::<Vec<_>>(),
    )
    .await
    .unwrap();
    assert!(events
        .last()
        .unwrap()
        .data
        .contains("\"status\":\"cancelled\""));
    let run = f.store.get_run("", live.id).await.unwrap().unwrap();
    assert_eq!(run.status, RunStatus::Cancelled);
    eventually("the cancelled run left the active set", || {
        ready(f.runs.active_runs() == 0)
    })
    .await;
    assert!(matches!(
        f.runs.cancel("", live.id).await,
        Err(RunError::Finished)
    ));
    assert!(matches!(
        f.runs.cancel("", Uuid::new_v4()).await,
        Err(RunError::NotFound)
    ));
}
