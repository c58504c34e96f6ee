use super::*;
use futures::StreamExt;

#[tokio::test]
async fn replay_then_follow_then_end() {
    let log = Arc::new(EventLog::new());
    log.append("start", "{}".into());
    log.append("step", "{}".into());
    let sub = log.subscribe(1).events;
    let writer = {
        let log = log.clone();
        tokio::spawn(async move {
            for _ in 0..50 {
                log.append("step", "{}".into());
                tokio::task::yield_now().await;
            }
            log.append("done", "{}".into());
            log.close();
        })
    };
    let ids: Vec<u64> = sub.map(|e| e.id).collect().await;
    writer.await.unwrap();
    assert_eq!(ids, (2..=53).collect::<Vec<_>>());
}

#[tokio::test]
async fn subscriber_after_close_gets_the_rest_and_ends() {
    let log = Arc::new(EventLog::new());
    for _ in 0..3 {
        log.append("x", "{}".into());
    }
    log.close();
    let ids: Vec<u64> = log.subscribe(0).events.map(|e| e.id).collect().await;
    assert_eq!(ids, [1, 2, 3]);
    let none: Vec<u64> = log.subscribe(3).events.map(|e| e.id).collect().await;
    assert!(none.is_empty());
    let beyond: Vec<u64> = log.subscribe(99).events.map(|e| e.id).collect().await;
    assert!(beyond.is_empty());
}

#[tokio::test]
async fn release_keeps_what_a_pinned_reader_has_not_read() {
    let log = Arc::new(EventLog::new());
    for _ in 0..10 {
        log.append("step", "{}".into());
    }
    log.release(10);
    assert_eq!(log.held(), 10, "no reader pinned: nothing is released");
    let (reader, at) = log.pin(0);
    assert_eq!(at, 0);
    log.release(10);
    assert_eq!(log.held(), 10, "the reader has read nothing yet");
    let (batch, _) = reader.since(4);
    assert_eq!(batch.first().map(|e| e.id), Some(5));
    log.release(10);
    assert_eq!((log.released(), log.held()), (4, 6));
    // Not past what is persisted, whatever the readers have read.
    reader.since(9);
    log.release(7);
    assert_eq!(log.released(), 7);
    // Ids keep counting across releases.
    log.append("step", "{}".into());
    assert_eq!(log.len(), 11);
    let (batch, _) = reader.since(9);
    assert_eq!(batch.iter().map(|e| e.id).collect::<Vec<_>>(), [10, 11]);
    // A late subscriber learns what it must read elsewhere, then gets the rest.
    let sub = log.subscribe(2);
    assert_eq!(sub.missing, Some((2, 7)));
    drop(reader);
    log.close();
    let ids: Vec<u64> = sub.events.map(|e| e.id).collect().await;
    assert_eq!(ids, [8, 9, 10, 11]);
    // Every pin gone (the subscription ended): nothing more is released.
    log.release(11);
    assert_eq!(log.released(), 7);
}

#[test]
fn sealed_log_takes_only_the_final_event() {
    let log = EventLog::new();
    assert!(log.append("start", "{}".into()));
    assert_eq!(log.seal(), Some(2));
    assert_eq!(log.seal(), None, "only the first seal wins");
    assert!(!log.append("step", "{}".into()), "dropped after the seal");
    log.close_with("done", "{}".into());
    assert!(log.is_closed());
    let (events, closed) = log.since(0);
    assert!(closed);
    let names: Vec<_> = events.iter().map(|e| (e.id, e.name)).collect();
    assert_eq!(names, [(1, "start"), (2, "done")]);
    log.close_with("done", "{}".into());
    assert_eq!(log.len(), 2, "a closed log takes nothing more");
}

#[tokio::test]
async fn readers_see_ids_up_to_the_ceiling_only() {
    let log = Arc::new(EventLog::with_ceiling(2));
    for _ in 0..4 {
        log.append("step", "{}".into());
    }
    assert_eq!(log.since(0).0.len(), 2);
    assert_eq!(log.pending(0).len(), 4, "the writer sees everything");
    let mut sub = log.subscribe(0).events;
    assert_eq!(sub.next().await.map(|e| e.id), Some(1));
    assert_eq!(sub.next().await.map(|e| e.id), Some(2));
    let waiting = tokio::spawn(async move { sub.next().await.map(|e| e.id) });
    tokio::task::yield_now().await;
    assert!(!waiting.is_finished(), "id 3 is not reserved yet");
    log.raise_ceiling(1);
    assert_eq!(log.ceiling(), 2, "never lowered");
    log.raise_ceiling(3);
    assert_eq!(waiting.await.unwrap(), Some(3));
}

#[tokio::test]
async fn closed_resolves_on_close_only() {
    let log = Arc::new(EventLog::new());
    let waiter = tokio::spawn({
        let log = log.clone();
        async move { log.closed().await }
    });
    log.append("step", "{}".into());
    tokio::task::yield_now().await;
    assert!(!waiter.is_finished());
    log.close();
    waiter.await.unwrap();
    // Already closed: resolves at once.
    log.closed().await;
}

#[test]
fn release_gives_back_the_room_of_a_drained_burst() {
    let log = Arc::new(EventLog::new());
    let (reader, _) = log.pin(0);
    for _ in 0..1000 {
        log.append("answer", "{}".into());
    }
    assert!(log.lock().events.capacity() >= 1000);
    // The reader has read up to 998 and the writer stored everything.
    reader.since(998);
    log.release(1000);
    assert_eq!(log.held(), 2);
    let room = log.lock().events.capacity();
    assert!(
        room <= 64,
        "the drained queue still holds room for {room} events"
    );
    let ids: Vec<u64> = log.since(0).0.iter().map(|e| e.id).collect();
    assert_eq!(ids, vec![999, 1000]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_waiting_reader_is_woken_by_appends_alone() {
    let log = Arc::new(EventLog::new());
    let readers: Vec<_> = (0..4)
        .map(|_| {
            let sub = log.subscribe(0).events;
            tokio::spawn(async move { sub.take(2_000).map(|e| e.id).collect::<Vec<u64>>().await })
        })
        .collect();
    // Appends racing the readers on the other worker, without yielding: a wake-up lost
    // between a reader's check and its registration would leave it waiting forever.
    for _ in 0..2_000 {
        log.append("step", "{}".into());
    }
    // Not closed: each reader must get its events from the appends' wake-ups.
    for reader in readers {
        let ids = tokio::time::timeout(std::time::Duration::from_secs(10), reader)
            .await
            .expect("a reader was never woken")
            .unwrap();
        assert_eq!(ids, (1..=2_000).collect::<Vec<_>>());
    }
}
