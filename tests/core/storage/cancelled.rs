//! Writes whose futures are dropped midway (a client hanging up, a cancelled run, a timeout) on
//! PostgreSQL. A cancelled `BEGIN` once left its pooled connection inside a transaction that
//! nothing ended (sqlx before 0.9.1): the next borrower's writes ran inside it, were
//! acknowledged, and stayed invisible to every other connection (a conversation created and
//! then "not found", lock waits that hung a delete).

use std::time::Duration;

use reagent::store::NewConversation;

use super::*;
use crate::support::backends::{run_on, Backend};

/// How many run starts are cut short, each after a different delay.
const CANCELLED: u64 = 400;

/// Connections of the test database left inside a transaction block.
const IDLE_IN_TRANSACTION: &str = "SELECT count(*) FROM pg_stat_activity \
    WHERE datname = current_database() AND state LIKE 'idle in transaction%'";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_cancelled_writes_leave_no_transaction_open() {
    run_on(Backend::Postgres, |url| async move {
        let store = Store::connect(&url).await.unwrap();
        let other = sqlx::PgPool::connect(&url).await.unwrap();
        let mut convs = Vec::new();
        for _ in 0..CANCELLED {
            let conv = store
                .create_conversation("o", NewConversation::default())
                .await
                .unwrap();
            convs.push(conv.id);
        }
        // Delays from 0 to 2 ms: some land before, some during and some after BEGIN's round trip.
        for (i, conv) in convs.iter().enumerate() {
            let delay = Duration::from_micros(i as u64 * 2_000 / CANCELLED);
            let _ = tokio::time::timeout(delay, start_run(&store, *conv, "q".into())).await;
        }
        // Connections go back to the pool (and their queued ROLLBACKs out) in the background.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let open: i64 = sqlx::query_scalar(IDLE_IN_TRANSACTION)
            .fetch_one(&other)
            .await
            .unwrap();
        assert_eq!(open, 0, "connections left inside a transaction");
        // Every acknowledged write is visible to another connection at once.
        for _ in 0..50 {
            let id = store
                .create_conversation("o", NewConversation::default())
                .await
                .unwrap()
                .id;
            let seen: i64 = sqlx::query_scalar("SELECT count(*) FROM conversations WHERE id = $1")
                .bind(id.to_string())
                .fetch_one(&other)
                .await
                .unwrap();
            assert_eq!(
                seen, 1,
                "an acknowledged conversation is not visible elsewhere"
            );
        }
        store.close().await;
        other.close().await;
    })
    .await;
}
