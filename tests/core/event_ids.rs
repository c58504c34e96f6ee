//! Event-id reservation (issue 17, item 3): readers of a run's live log never see an id above
//! the ceiling committed in `runs.event_ceiling`, however far the run's appends run ahead of
//! the event writer, and the writer raises the ceiling a block ahead so a steady stream does not
//! wait for it. Both backends (`REAGENT_SKIP_PG=1` skips PostgreSQL).

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use reagent::domain::Mode;
use reagent::runs::persist::EventWriter;
use reagent::runs::EventLog;
use reagent::store::{NewConversation, NewRun, Store, EVENT_ID_BLOCK};
use uuid::Uuid;

on_both_backends!(
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    readers_see_only_committed_ids
);

/// Events appended at once, far beyond one block, so appends outrun the writer's ticks.
const EVENTS: u64 = 5 * EVENT_ID_BLOCK as u64;

async fn readers_see_only_committed_ids(url: String) {
    let store = Store::connect(&url).await.unwrap();
    let conv = store
        .create_conversation("", NewConversation::default())
        .await
        .unwrap()
        .id;
    let run = Uuid::new_v4();
    store
        .create_run(NewRun {
            id: run,
            conversation_id: conv,
            owner: String::new(),
            mode: Mode::Json,
            model: "m".into(),
            traceparent: None,
        })
        .await
        .unwrap();
    assert_eq!(store.event_ceiling(run).await.unwrap(), EVENT_ID_BLOCK);
    let writer = EventWriter::new(store.clone(), Duration::from_millis(20));
    let log = Arc::new(EventLog::with_ceiling(EVENT_ID_BLOCK as u64));
    writer.register(run, log.clone());
    let mut events = log.subscribe(0).events;
    for i in 0..EVENTS {
        log.append("step", format!("{{\"i\":{i}}}"));
    }
    // The writer starts only now, so nothing can have been committed yet.
    assert_eq!(
        log.since(0).0.len() as u64,
        EVENT_ID_BLOCK as u64,
        "nothing above the block the run was created with is visible before a commit"
    );
    let task = tokio::spawn(writer.clone().run());
    writer.notify();
    let mut committed = EVENT_ID_BLOCK as u64;
    let mut next = 1;
    while next <= EVENTS {
        let e = tokio::time::timeout(Duration::from_secs(60), events.next())
            .await
            .expect("the ceiling is raised")
            .expect("the log is open");
        assert_eq!(e.id, next);
        if e.id > committed {
            committed = store.event_ceiling(run).await.unwrap() as u64;
            assert!(
                e.id <= committed,
                "id {} seen above the committed ceiling",
                e.id
            );
        }
        next += 1;
    }
    writer.finish(run, None).await.unwrap();
    log.close();
    writer.stop();
    task.await.unwrap();
    let ceiling = store.event_ceiling(run).await.unwrap() as u64;
    assert!(ceiling >= EVENTS, "{ceiling}");
    // Raised a block at a time, not once per tick: few extra writes.
    assert!(ceiling <= EVENTS + EVENT_ID_BLOCK as u64, "{ceiling}");
    store.close().await;
}
