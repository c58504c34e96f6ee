//! A full disk under SQLite: a real tmpfs of 8 MiB ([`SmallFs`]) filled with a ballast file,
//! then freed. No fault-injecting layer: SQLite's own "database or disk is full" on a real
//! filesystem. Skipped (saying so) only where the machine cannot mount one.

use reagent::store::{NewConversation, StoredEvent};

use super::*;
use crate::support::fullfs::SmallFs;

/// What one write stored, to look for afterwards.
#[derive(Debug)]
enum Acked {
    Conversation(Uuid),
    Events(Uuid, i64),
}

/// Before issue 37's fix: after a COMMIT failed with SQLITE_FULL, SQLite had rolled back but
/// sqlx still counted the transaction open, so the next "transaction" was a SAVEPOINT inside
/// one that was never committed, and writes were acknowledged without being stored.
#[tokio::test]
async fn sqlite_acknowledges_only_committed_writes() {
    crate::support::log::init();
    let Some(fs) = SmallFs::mount(8) else { return };
    let store = Store::connect(&fs.sqlite_url()).await.unwrap();
    let conv = store
        .create_conversation("o", NewConversation::default())
        .await
        .unwrap()
        .id;
    let run = start_run(&store, conv, "q".into()).await.unwrap();
    fs.fill();
    let mut acked = Vec::new();
    let mut failed = 0;
    for i in 0..12_i64 {
        let result = if i % 3 == 2 {
            let new = NewConversation {
                title: Some("t".repeat(100_000)),
                ..NewConversation::default()
            };
            store
                .create_conversation("o", new)
                .await
                .map(|c| Acked::Conversation(c.id))
        } else {
            let events: Vec<StoredEvent> = (1..=150)
                .map(|s| StoredEvent {
                    seq: i * 1000 + s,
                    name: "step".into(),
                    data: "d".repeat(3000),
                })
                .collect();
            store
                .append_events(run, &events)
                .await
                .map(|()| Acked::Events(run, i * 1000 + 150))
        };
        match result {
            Ok(a) => {
                assert_stored(&store, &a).await;
                acked.push(a);
            }
            Err(_) => failed += 1,
        }
    }
    assert!(
        failed > 0,
        "the full disk refused no write: the test proves nothing"
    );
    fs.free();
    let after = store
        .create_conversation("o", NewConversation::default())
        .await
        .expect("writes work again once space is freed");
    acked.push(Acked::Conversation(after.id));
    assert_stored(&store, acked.last().unwrap()).await;
    store.close().await;
    let reopened = Store::connect(&fs.sqlite_url()).await.unwrap();
    for a in &acked {
        assert_stored(&reopened, a).await;
    }
    reopened.close().await;
}

/// Fails unless what `a` acknowledged is visible to the read pool (another connection).
async fn assert_stored(store: &Store, a: &Acked) {
    match a {
        Acked::Conversation(id) => {
            let found = store.get_conversation("o", *id).await.unwrap();
            assert!(
                found.is_some(),
                "acknowledged conversation {id} is not stored"
            );
        }
        Acked::Events(run, last) => {
            let stored = store.last_event_seq(*run).await.unwrap();
            assert!(
                stored >= *last,
                "acknowledged events up to {last}, stored {stored}"
            );
        }
    }
}
