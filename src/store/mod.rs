//! Persistence: every SQL statement of reagent lives under this module.
//!
//! [`Store`] wraps either a SQLite pool (the default, `sqlite://data/reagent.db`) or a
//! PostgreSQL pool (`postgres://…`). The SQL text is shared by both backends: ids are stored as
//! UUID text, times as 64-bit microseconds since the Unix epoch, JSON as text, and bind
//! parameters use the `$n` form that both drivers accept. The one place that differs is the DDL,
//! kept in `migrations/sqlite` and `migrations/postgres` and applied on [`Store::connect`].
//!
//! Layout: [`models`] (the public rows; their JSON is `server::views`), [`error`], `binds` (the
//! one binder of the inserts), then one file per table family — `conversations` (conversations
//! and messages), `runs`, `events` (event log and tool audit; the event writer's batches,
//! fenced by lease epoch), `leases` (run leases, the takeover sweep and the `instances`
//! heartbeat, docs/deployment.md), `artifacts` (which also implements the engine's `ArtifactSink`),
//! `health` (whether writes commit, and the readiness check of `/readyz`), and `agents` (the
//! agents managed at run time and their versions).
//!
//! Tenancy: every read, update and delete by id that a client can reach is scoped by `owner`
//! (the API-key name, `""` when auth is off) and answers `None`/`false` for another owner's
//! rows, so handlers turn both "missing" and "not yours" into the same 404.

mod agents;
mod approvals;
mod artifacts;
mod binds;
mod budget;
pub mod commands;
mod conversations;
pub mod error;
mod events;
mod group;
mod health;
mod leases;
pub mod models;
pub mod notify;
mod responses;
mod runs;

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use sqlx::migrate::Migrator;
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};

pub use agents::StoredAgent;
pub use approvals::{ApprovalRecord, RowDecision};
pub use budget::{
    Booked, CallUsage, Hold, Reservation, Settlement, UsageGroup, UsageRow, WindowLimit,
    WindowSpend,
};
pub use commands::{CommandKind, RunCommand};
pub use error::StoreError;
pub use health::READY_TIMEOUT;
pub use leases::LeaseHolder;
pub use models::{
    AuditRow, Conversation, FinalState, ForkedFrom, InstanceRow, NewArtifact, NewConversation,
    NewMessage, NewRun, RunBatch, RunFinish, RunRow, StoredArtifact, StoredEvent, StoredMessage,
    TakenRun, Written, EVENT_ID_BLOCK,
};
pub use runs::RunStart;

static SQLITE_MIGRATIONS: Migrator = sqlx::migrate!("./migrations/sqlite");
static POSTGRES_MIGRATIONS: Migrator = sqlx::migrate!("./migrations/postgres");

/// How long a SQLite connection waits for the write lock before giving up. Writers are short
/// (single statements or one batch insert), so a few seconds only ever matters under overload.
const SQLITE_BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The database behind a [`Store`]. An enum rather than `sqlx::Any` so each driver keeps its
/// native types (BLOB/BYTEA, 64-bit integers) and its own connection settings.
#[derive(Clone, Debug)]
enum Backend {
    Sqlite(SqlitePool),
    Postgres(PgPool),
}

/// Runs the same body against whichever pool the store holds. The body is compiled once per
/// backend, so every statement is type-checked against both drivers.
macro_rules! with_pool {
    ($store:expr, |$pool:ident| $body:expr) => {
        match &$store.backend {
            $crate::store::Backend::Sqlite($pool) => $body,
            $crate::store::Backend::Postgres($pool) => $body,
        }
    };
}
pub(crate) use with_pool;

/// Like [`with_pool!`] for a write, which must hold the write turn: on SQLite `$pool` is the
/// store's one writer connection (see `Store::writer`), on PostgreSQL the pool.
/// Its outcome is reported to the store's write health (`health.rs`, for `/readyz`), and an
/// error is returned from the enclosing function (the body runs in an async block: it cannot
/// `return` from the function itself).
macro_rules! with_writer {
    ($store:expr, |$pool:ident| $body:expr) => {{
        let outcome: Result<_, $crate::store::StoreError> = async {
            Ok(match (&$store.backend, &$store.writer) {
                (_, Some($pool)) => $body,
                ($crate::store::Backend::Sqlite($pool), None) => $body,
                ($crate::store::Backend::Postgres($pool), None) => $body,
            })
        }
        .await;
        $store.health.wrote(outcome)?
    }};
}
pub(crate) use with_writer;

/// The persistence handle. Cheap to clone (pools are reference counted).
#[derive(Clone, Debug)]
pub struct Store {
    backend: Backend,
    /// SQLite only: write transactions take turns here (a fair, async queue) instead of
    /// contending for the database's single write lock, where the losers sleep in SQLite's busy
    /// handler (1 to 100 ms per retry) and fail after the busy timeout under load.
    write_gate: Option<Arc<tokio::sync::Mutex<()>>>,
    /// SQLite file databases: every write goes through this pool of ONE connection, kept open.
    /// In WAL mode a connection drops its whole page cache when another connection has written
    /// since its last transaction; with writes spread over the read pool, every pooled
    /// connection kept refilling its cache with the event tables' pages, which showed as
    /// resident memory per run (BENCHMARKS.md). `None` otherwise
    /// (PostgreSQL; an in-memory SQLite database, which has one connection).
    writer: Option<SqlitePool>,
    /// Run starts waiting for the next group commit (see `Store::create_run_with_query`).
    starts: Arc<group::Grouped<runs::StartRow, i64>>,
    /// Budget bookings waiting for the next group commit (see `Store::book`).
    bookings: Arc<budget::Bookings>,
    /// Who new runs are leased to (see [`Store::hold_leases_as`]); shared by every clone.
    lease_holder: Arc<std::sync::OnceLock<Arc<LeaseHolder>>>,
    /// SQLite only: the runs whose lease epochs the event writer need not check again
    /// (`events/fence.rs`); `None` on PostgreSQL, which checks every run every time.
    verified: Option<Arc<std::sync::Mutex<events::Verified>>>,
    /// Whether writes commit, and the SQLite file opened (`health.rs`, for `/readyz`).
    health: Arc<health::Health>,
}

impl Store {
    /// Connects to `database_url` (`sqlite:…` or `postgres:`/`postgresql:…`) and applies the
    /// pending migrations, so a returned store is ready to serve.
    pub async fn connect(database_url: &str) -> Result<Store, StoreError> {
        Self::connect_with(database_url, None).await
    }

    /// [`Store::connect`]; on PostgreSQL, a session left idle inside a transaction for
    /// `idle_in_transaction` is ended by the server. A paused instance (SIGSTOP, a VM frozen)
    /// would otherwise keep the row locks of its open transaction, and no other instance could
    /// take its runs (`SKIP LOCKED` skips them) until it woke up: the run manager passes a
    /// fraction of the lease TTL.
    pub async fn connect_with(
        database_url: &str,
        idle_in_transaction: Option<Duration>,
    ) -> Result<Store, StoreError> {
        let url = database_url.trim();
        let mut writer = None;
        let mut file = None;
        let backend = if url.starts_with("sqlite:") {
            let (pool, write) = connect_sqlite(url).await?;
            if write.is_some() {
                file = sqlite_file(url).and_then(health::FileId::of);
            }
            writer = write;
            Backend::Sqlite(pool)
        } else if url.starts_with("postgres:") || url.starts_with("postgresql:") {
            let mut options =
                PgConnectOptions::from_str(url).map_err(|e| StoreError::Connect(e.to_string()))?;
            if let Some(idle) = idle_in_transaction {
                let ms = idle.as_millis().max(1);
                options = options.options([("idle_in_transaction_session_timeout", ms)]);
            }
            let pool = PgPoolOptions::new()
                .max_connections(10)
                .acquire_timeout(Duration::from_secs(10))
                .connect_with(options)
                .await
                .map_err(|e| StoreError::Connect(e.to_string()))?;
            Backend::Postgres(pool)
        } else {
            return Err(StoreError::UnsupportedUrl);
        };
        let (write_gate, verified) = match backend {
            Backend::Sqlite(_) => (
                Some(Arc::new(tokio::sync::Mutex::new(()))),
                Some(Arc::default()),
            ),
            Backend::Postgres(_) => (None, None),
        };
        let store = Store {
            backend,
            write_gate,
            writer,
            starts: Arc::default(),
            bookings: Arc::default(),
            lease_holder: Arc::default(),
            verified,
            health: Arc::new(health::Health::with_file(file)),
        };
        store.migrate().await?;
        Ok(store)
    }

    /// Held for the whole of every write transaction (see `write_gate`); `None` on PostgreSQL,
    /// whose row locks let writers proceed concurrently.
    pub(crate) async fn write_turn(&self) -> Option<tokio::sync::MutexGuard<'_, ()>> {
        match &self.write_gate {
            Some(gate) => Some(gate.lock().await),
            None => None,
        }
    }

    async fn migrate(&self) -> Result<(), StoreError> {
        let result = match &self.backend {
            Backend::Sqlite(pool) => SQLITE_MIGRATIONS.run(pool).await,
            Backend::Postgres(pool) => POSTGRES_MIGRATIONS.run(pool).await,
        };
        result.map_err(|e| StoreError::Migration(e.to_string()))
    }

    /// A round trip to the database, for `/readyz`.
    pub async fn ping(&self) -> Result<(), StoreError> {
        with_pool!(self, |pool| {
            sqlx::query("SELECT 1").execute(pool).await?;
        });
        Ok(())
    }

    /// SQLite's journal mode (`"wal"` for a file database opened by [`Store::connect`]);
    /// `None` on PostgreSQL.
    pub async fn journal_mode(&self) -> Result<Option<String>, StoreError> {
        match &self.backend {
            Backend::Sqlite(pool) => {
                let mode: String = sqlx::query_scalar("PRAGMA journal_mode")
                    .fetch_one(pool)
                    .await?;
                Ok(Some(mode.to_lowercase()))
            }
            Backend::Postgres(_) => Ok(None),
        }
    }

    /// `"sqlite"` or `"postgres"`, for logs and `/readyz`.
    pub fn backend(&self) -> &'static str {
        match self.backend {
            Backend::Sqlite(_) => "sqlite",
            Backend::Postgres(_) => "postgres",
        }
    }

    /// Closes every pooled connection; waits for checked-out ones to come back. Used at
    /// shutdown (and by tests that drop their database afterwards).
    pub async fn close(&self) {
        if let Some(writer) = &self.writer {
            writer.close().await;
        }
        match &self.backend {
            Backend::Sqlite(pool) => pool.close().await,
            Backend::Postgres(pool) => pool.close().await,
        }
    }
}

/// Opens (creating file and parent directory when missing) a SQLite database in WAL mode: the
/// pool, and for a file database the one-connection writer pool (see `Store::writer`).
/// Where `database_url` keeps its data, for the start-up log: the SQLite file as an absolute
/// path (a relative URL is relative to the working directory, which is easy to forget), else
/// the URL without its password.
pub fn location(url: &str) -> String {
    if !url.starts_with("sqlite:") {
        return crate::config::redact_url(url);
    }
    if url.contains(":memory:") || url.contains("mode=memory") {
        return "SQLite in memory (nothing is kept after exit)".into();
    }
    match SqliteConnectOptions::from_str(url) {
        Ok(options) => {
            let file = options.get_filename();
            let file = std::path::absolute(file).unwrap_or_else(|_| file.to_path_buf());
            format!("SQLite file {}", file.display())
        }
        Err(_) => url.to_string(),
    }
}

/// The file of a SQLite file database, as an absolute path.
fn sqlite_file(url: &str) -> Option<std::path::PathBuf> {
    let options = SqliteConnectOptions::from_str(url).ok()?;
    std::path::absolute(options.get_filename()).ok()
}

async fn connect_sqlite(url: &str) -> Result<(SqlitePool, Option<SqlitePool>), StoreError> {
    let options = SqliteConnectOptions::from_str(url)
        .map_err(|e| StoreError::Connect(e.to_string()))?
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Normal)
        .foreign_keys(true)
        // The statement journal of a multi-row write (the group commits) stays in memory
        // instead of spilling to a temporary file opened and closed per statement.
        .pragma("temp_store", "memory")
        .busy_timeout(SQLITE_BUSY_TIMEOUT);

    let in_memory = url.contains(":memory:") || url.contains("mode=memory");
    if !in_memory {
        if let Some(parent) = options.get_filename().parent() {
            if !parent.as_os_str().is_empty() {
                tokio::fs::create_dir_all(parent)
                    .await
                    .map_err(|e| StoreError::Connect(format!("creating {parent:?}: {e}")))?;
            }
        }
    }

    // No liveness ping before handing out a connection: an in-process SQLite connection cannot
    // drop, and the ping is a round trip to its worker thread (two thread wake-ups) on every
    // statement the pool runs.
    let base = SqlitePoolOptions::new()
        .acquire_timeout(Duration::from_secs(10))
        .test_before_acquire(false)
        .before_acquire(|conn, _| Box::pin(async move { Ok(!left_in_transaction(conn)) }));
    // Exactly one connection, never closed: an in-memory database lives as long as a connection
    // to it, and a writer's page cache as long as its connection.
    let single = base
        .clone()
        .max_connections(1)
        .min_connections(1)
        .idle_timeout(None)
        .max_lifetime(None);
    let connect = |pool: SqlitePoolOptions| {
        let options = options.clone();
        async move {
            pool.connect_with(options)
                .await
                .map_err(|e| StoreError::Connect(e.to_string()))
        }
    };
    if in_memory {
        return Ok((connect(single).await?, None));
    }
    let pool = connect(base.max_connections(8)).await?;
    let writer = connect(single).await?;
    Ok((pool, Some(writer)))
}

/// A pooled SQLite connection that sqlx still counts inside a transaction once its last user
/// is done: it is closed (the pool opens a fresh one) instead of being handed out again.
///
/// When a COMMIT fails with SQLITE_FULL or SQLITE_IOERR, SQLite may already have rolled the
/// transaction back; the ROLLBACK sqlx then queues fails ("no transaction is active") and sqlx
/// keeps counting the transaction open. Its next `begin` issued a SAVEPOINT, which opened a
/// real transaction that the matching RELEASE never committed: every later write was
/// acknowledged and none was stored (issue 37). The pool's release already waited for the
/// queued rollback, so the count read here is settled, and reading it costs nothing.
fn left_in_transaction(conn: &mut sqlx::SqliteConnection) -> bool {
    use sqlx::Connection;
    let stuck = conn.is_in_transaction();
    if stuck {
        tracing::warn!("closing a SQLite connection left inside a failed transaction");
    }
    stuck
}

/// `text` as both backends can store it: NUL (U+0000) becomes U+FFFD. PostgreSQL's `text`
/// refuses NUL, so a model answer or tool name containing one would fail to persist there
/// (the answer lost, found by `tests/api/security.rs`); SQLite gets the same text so that both
/// backends return the same content.
pub fn storable(text: &str) -> std::borrow::Cow<'_, str> {
    if text.contains('\0') {
        std::borrow::Cow::Owned(text.replace('\0', "\u{FFFD}"))
    } else {
        std::borrow::Cow::Borrowed(text)
    }
}

#[cfg(test)]
mod tests;
