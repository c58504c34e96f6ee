//! Storage failures (issue 37): writes that fail because the disk is full (a real small
//! filesystem, [`SmallFs`]), a PostgreSQL write the server refuses, the SQLite file deleted
//! under the store, an unreachable PostgreSQL.
//!
//! Guarantees checked:
//! - a write is acknowledged only after its commit is durable: on a full disk every write
//!   either fails or is found afterwards by another connection and after a reopen, and writes
//!   work again once space is freed (`sqlite_acknowledges_only_committed_writes`);
//! - on PostgreSQL a refused write (SQLSTATE 53100, disk full) is an error, never an
//!   acknowledgement, the store is not ready while writes fail and is again once a probe write
//!   commits (`postgres_acknowledges_only_committed_writes`).
//!
//! By topic: [`disk_full`], [`refused`].

#[cfg(unix)]
mod disk_full;
mod refused;

use reagent::domain::{MessageKind, MessageRole, Mode};
use reagent::store::{NewMessage, NewRun, Store, StoreError};
use uuid::Uuid;

/// Starts a run with query `content` in conversation `conv`.
async fn start_run(store: &Store, conv: Uuid, content: String) -> Result<Uuid, StoreError> {
    let run = Uuid::new_v4();
    let new = NewRun {
        id: run,
        conversation_id: conv,
        owner: "o".into(),
        mode: Mode::Json,
        model: "m".into(),
        traceparent: None,
    };
    let query = NewMessage {
        id: None,
        conversation_id: conv,
        role: MessageRole::User,
        kind: MessageKind::Query,
        content,
        run_id: Some(run),
        images: Vec::new(),
    };
    store.create_run_with_query(new, query).await.map(|_| run)
}
