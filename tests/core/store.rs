//! The store suite, written once against `&Store` and run on both backends.
//!
//! SQLite runs on a temp file. PostgreSQL runs on a fresh database from
//! [`run_on`](crate::support::backends::run_on), dropped afterwards (even when an assertion
//! fails). When PostgreSQL is unreachable the test FAILS, unless `REAGENT_SKIP_PG=1` is set in
//! the environment (for machines without it).
//!
//! By topic: [`agents`], [`conversations`], [`events`], [`runs`], [`schema`].

mod agents;
mod conversations;
mod events;
mod runs;
mod schema;

use agents::agents_versions_and_isolation;
use conversations::{
    conversations_crud_and_isolation, conversations_pagination, conversations_search,
    messages_order_and_recall,
};
use events::{
    artifacts_round_trip, audit_rows, concurrent_event_appends, delete_cascades, events_log,
};
use runs::{
    concurrent_starts, conversation_seeded_with_history, conversation_with_first_run, run_lifecycle,
};

use std::collections::HashSet;

use reagent::agent::artifacts::ArtifactSink;
use reagent::agent::events::RunStatus;
use reagent::domain::{MessageKind, MessageRole, Mode};
use reagent::llm::Usage;
use reagent::server::views;
use reagent::store::{
    AuditRow, Conversation, NewConversation, NewMessage, NewRun, RunFinish, Store, StoreError,
    StoredEvent,
};
use reagent::tools::Artifact;
use serde_json::{json, Value};
use uuid::Uuid;

use crate::support::backends::{run_on, Backend};

/// A fresh owner name, so the parts of the suite never see each other's rows.
fn owner(tag: &str) -> String {
    format!("{tag}-{}", Uuid::new_v4().simple())
}

fn keys(v: &Value) -> Vec<String> {
    let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
    k.sort();
    k
}

async fn conversation(store: &Store, owner: &str) -> Uuid {
    store
        .create_conversation(owner, NewConversation::default())
        .await
        .unwrap()
        .id
}

/// `owner`'s conversation `id`, which the test expects to be stored.
async fn stored_conversation(store: &Store, owner: &str, id: Uuid) -> Conversation {
    store.get_conversation(owner, id).await.unwrap().unwrap()
}

/// Whether `owner` sees a conversation `id`.
async fn has_conversation(store: &Store, owner: &str, id: Uuid) -> bool {
    store.get_conversation(owner, id).await.unwrap().is_some()
}

/// Whether run `id` is among the store's running runs (what restart recovery would scan).
async fn is_running(store: &Store, id: Uuid) -> bool {
    store
        .running_runs()
        .await
        .unwrap()
        .iter()
        .any(|r| r.id == id)
}

async fn run(store: &Store, owner: &str, conversation_id: Uuid) -> Uuid {
    let id = Uuid::new_v4();
    let new = NewRun {
        id,
        conversation_id,
        owner: owner.to_string(),
        mode: Mode::Native,
        model: "m".into(),
        traceparent: None,
    };
    store.create_run(new).await.unwrap();
    id
}

/// Events `range` named `name`, with `data(seq)`.
fn numbered(
    name: &str,
    range: std::ops::RangeInclusive<i64>,
    data: impl Fn(i64) -> String,
) -> Vec<StoredEvent> {
    range
        .map(|seq| StoredEvent {
            seq,
            name: name.into(),
            data: data(seq),
        })
        .collect()
}

fn events(range: std::ops::RangeInclusive<i64>) -> Vec<StoredEvent> {
    numbered("step", range, |seq| format!("{{\"n\":{seq}}}"))
}

fn finish(status: RunStatus) -> RunFinish {
    RunFinish {
        status,
        iterations: 3,
        tool_calls: 2,
        usage: Usage {
            prompt_tokens: 10,
            completion_tokens: 5,
            total_tokens: 15,
            llm_calls: 2,
            cache_read_tokens: 7,
            cache_write_tokens: 3,
            cost_usd: reagent::domain::Cost::from_nanos(1_250_000),
            unpriced_calls: 1,
            estimated_calls: 1,
        },
        error: None,
    }
}

async fn suite(store: &Store) {
    store.ping().await.unwrap();
    conversations_crud_and_isolation(store).await;
    conversations_pagination(store).await;
    conversations_search(store).await;
    messages_order_and_recall(store).await;
    run_lifecycle(store).await;
    conversation_with_first_run(store).await;
    conversation_seeded_with_history(store).await;
    concurrent_starts(store).await;
    events_log(store).await;
    concurrent_event_appends(store).await;
    audit_rows(store).await;
    artifacts_round_trip(store).await;
    delete_cascades(store).await;
    agents_versions_and_isolation(store).await;
}

#[tokio::test]
async fn sqlite_suite_creates_file_and_survives_restart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nested").join("deeper").join("reagent.db");
    assert!(!path.parent().unwrap().exists());
    let url = format!("sqlite://{}", path.display());

    let store = Store::connect(&url).await.unwrap();
    assert!(path.exists(), "connect creates the directory and the file");
    assert_eq!(store.backend(), "sqlite");
    suite(&store).await;

    let who = owner("restart");
    let conv = store
        .create_conversation(
            &who,
            NewConversation {
                title: Some("kept".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let id = run(&store, &who, conv.id).await;
    store.append_events(id, &events(1..=3)).await.unwrap();
    let wal = path.with_file_name("reagent.db-wal");
    assert!(wal.exists(), "WAL journal mode");
    store.close().await;

    // A restart: migrations are re-checked, data is still there, the run is still running.
    let store = Store::connect(&url).await.unwrap();
    assert_eq!(
        stored_conversation(&store, &who, conv.id)
            .await
            .title
            .as_deref(),
        Some("kept")
    );
    assert_eq!(store.list_events(id, 0).await.unwrap(), events(1..=3));
    assert!(is_running(&store, id).await);
    store.close().await;
}

#[tokio::test]
async fn sqlite_in_memory_works() {
    let store = Store::connect("sqlite::memory:").await.unwrap();
    let who = owner("mem");
    let id = conversation(&store, &who).await;
    assert!(store.get_conversation(&who, id).await.unwrap().is_some());
}

#[tokio::test]
async fn unsupported_url_is_rejected() {
    assert!(matches!(
        Store::connect("mysql://x").await,
        Err(StoreError::UnsupportedUrl)
    ));
}

#[tokio::test]
async fn postgres_suite() {
    run_on(Backend::Postgres, |url| async move {
        let store = Store::connect(&url).await.unwrap();
        assert_eq!(store.backend(), "postgres");
        suite(&store).await;
        store.close().await;
        // Reconnecting re-runs the migrator over an up-to-date schema.
        let again = Store::connect(&url).await.unwrap();
        again.ping().await.unwrap();
        again.close().await;
    })
    .await;
}
