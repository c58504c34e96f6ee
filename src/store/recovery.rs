//! [`RecoveryLock`]: at most one process at a time recovers the runs left `running` in one
//! database. On PostgreSQL it is a session advisory lock held on a connection of its own for the
//! life of the process, so a second instance started on the same database does not resume (or
//! fail) the runs a live instance is executing; the lock goes when its holder's session ends
//! (exit, crash). SQLite serves one process: the lock is always granted.

use sqlx::{Connection, PgConnection};

use super::{Backend, Store, StoreError};

/// The advisory-lock key of run recovery (an arbitrary constant: "reagent1" in ASCII).
const RECOVERY_LOCK_KEY: i64 = 0x7265_6167_656e_7431;

/// Held while this process may recover runs; released on drop or [`RecoveryLock::release`].
pub struct RecoveryLock {
    /// The session holding the advisory lock (PostgreSQL).
    session: Option<PgConnection>,
}

impl std::fmt::Debug for RecoveryLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecoveryLock")
            .field("session", &self.session.is_some())
            .finish()
    }
}

impl RecoveryLock {
    /// Ends the holding session (the lock with it).
    pub async fn release(self) {
        if let Some(session) = self.session {
            let _ = session.close().await;
        }
    }
}

impl Store {
    /// The recovery lock, or `None` while another process holds it.
    pub async fn recovery_lock(&self) -> Result<Option<RecoveryLock>, StoreError> {
        let Backend::Postgres(pool) = &self.backend else {
            return Ok(Some(RecoveryLock { session: None }));
        };
        // A connection of its own, out of the pool, so the lock lives as long as we keep it.
        let mut session = pool.acquire().await?.detach();
        let granted: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock($1)")
            .bind(RECOVERY_LOCK_KEY)
            .fetch_one(&mut session)
            .await?;
        if !granted {
            let _ = session.close().await;
            return Ok(None);
        }
        Ok(Some(RecoveryLock {
            session: Some(session),
        }))
    }
}
