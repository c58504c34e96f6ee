//! `Store::listen`/`Store::notify` (docs/deployment.md wake-up hints): a notification reaches every
//! subscriber of the listening process; a terminated listener connection is reported as
//! `Hint::Missed` and the listener hears again afterwards; SQLite starts no listener.

use std::time::Duration;

use reagent::store::notify::{Hint, Subscription, COMMANDS_CHANNEL, EVENTS_CHANNEL};
use reagent::store::Store;

use crate::support::backends::{run_on, Backend};

async fn next(sub: &mut Subscription) -> Hint {
    tokio::time::timeout(Duration::from_secs(10), sub.recv())
        .await
        .expect("no hint within 10 s")
        .expect("notifier stopped")
}

#[tokio::test]
async fn notifications_reach_every_subscriber_and_survive_a_terminated_listener() {
    run_on(Backend::Postgres, |url| async move {
        let listening = Store::connect(&url).await.unwrap();
        let notifier = listening
            .listen(&[EVENTS_CHANNEL, COMMANDS_CHANNEL])
            .await
            .unwrap()
            .expect("PostgreSQL listens");
        let (mut a, mut b) = (notifier.subscribe(), notifier.subscribe());
        let sender = Store::connect(&url).await.unwrap();
        sender.notify(COMMANDS_CHANNEL, "run-1").await.unwrap();
        let want = Hint::Notified {
            channel: COMMANDS_CHANNEL.into(),
            payload: "run-1".into(),
        };
        assert_eq!(next(&mut a).await, want);
        assert_eq!(next(&mut b).await, want);

        // Kill the listener's backend from outside, as an operator or a failover would.
        let admin = sqlx::PgPool::connect(&url).await.unwrap();
        let killed: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
             WHERE datname = current_database() AND query ILIKE 'LISTEN%') t",
        )
        .fetch_one(&admin)
        .await
        .unwrap();
        assert_eq!(killed, 1, "one listener connection");
        let mut missed = false;
        // The loss is reported, then hints flow again on the new connection.
        for _ in 0..50 {
            sender.notify(EVENTS_CHANNEL, "run-2").await.unwrap();
            match tokio::time::timeout(Duration::from_millis(200), a.recv()).await {
                Ok(Some(Hint::Missed)) => missed = true,
                Ok(Some(Hint::Notified { payload, .. })) if payload == "run-2" && missed => {
                    notifier.stop();
                    admin.close().await;
                    listening.close().await;
                    sender.close().await;
                    return;
                }
                _ => {}
            }
        }
        panic!("no notification after the listener was terminated (missed reported: {missed})");
    })
    .await;
}

#[tokio::test]
async fn sqlite_starts_no_listener() {
    run_on(Backend::Sqlite, |url| async move {
        let store = Store::connect(&url).await.unwrap();
        assert!(store.listen(&[EVENTS_CHANNEL]).await.unwrap().is_none());
        store.notify(EVENTS_CHANNEL, "x").await.unwrap();
    })
    .await;
}
