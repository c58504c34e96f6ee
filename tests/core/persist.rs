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
//!
//! By topic: [`commands`] (a run's end closes its commands), [`durable`] (the in-flight
//! record of a call that must not run twice), [`failures`], [`fencing`], [`hot`] (runs
//! followed through another instance), [`writes`].

mod commands;
mod durable;
mod failures;
mod fencing;
mod hot;
mod writes;

use std::sync::Arc;
use std::time::Duration;

use reagent::agent::checkpoint::{CheckpointJson, JsonList};
use reagent::agent::events::RunStatus;
use reagent::domain::{MessageKind, MessageRole, Mode};
use reagent::llm::Usage;
use reagent::runs::persist::{EventWriter, Fence, Heat, PersistError};
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
                traceparent: None,
            },
            NewMessage {
                id: None,
                conversation_id: conv,
                role: MessageRole::User,
                kind: MessageKind::Query,
                content: "q".into(),
                run_id: Some(run),
                images: Vec::new(),
            },
        )
        .await
        .unwrap();
    (conv, run)
}

/// The names of the events stored for `run`, in order.
async fn event_names(store: &Store, run: Uuid) -> Vec<String> {
    store
        .list_events(run, 0)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect()
}

fn final_state(conv: Uuid, run: Uuid, answer: &str) -> FinalState {
    FinalState {
        budget: None,
        close_commands: false,
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
            images: Vec::new(),
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
