//! The store's error type. Messages may contain driver or SQL detail: they are for logs only,
//! and the HTTP layer maps every variant except [`StoreError::InvalidCursor`] and
//! [`StoreError::Conflict`] to a generic 500.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum StoreError {
    /// The URL is neither `sqlite:` nor `postgres:`/`postgresql:`.
    #[error("unsupported database url (expected sqlite:… or postgres:…)")]
    UnsupportedUrl,
    /// The database could not be opened or reached at start-up.
    #[error("database connection failed: {0}")]
    Connect(String),
    /// A migration failed: the schema is not usable.
    #[error("database migration failed: {0}")]
    Migration(String),
    /// The database cannot write or cannot be reached right now: a full disk, an I/O error, a
    /// read-only or vanished file, a lost connection, no free connection in time. Retrying
    /// later may succeed; `/readyz` answers 503 while writes fail this way.
    #[error("database unavailable: {0}")]
    Unavailable(String),
    /// Any other driver error.
    #[error("database error: {0}")]
    Database(String),
    /// A uniqueness rule was hit: for runs, the conversation already has a running run
    /// (docs/api.md `run_active`); for other rows, a reused id.
    #[error("conflict: {0}")]
    Conflict(String),
    /// The row an insert depends on does not exist (e.g. an artifact for an unknown run).
    #[error("not found")]
    NotFound,
    /// A `before` cursor that this store did not produce: a client error (400).
    #[error("invalid pagination cursor")]
    InvalidCursor,
    /// A stored value could not be read back (bad UUID, time out of range, bad JSON).
    #[error("corrupt stored value: {0}")]
    Corrupt(String),
}

impl From<sqlx::Error> for StoreError {
    fn from(e: sqlx::Error) -> Self {
        match &e {
            sqlx::Error::Database(db) if db.is_unique_violation() => {
                StoreError::Conflict(db.message().to_string())
            }
            _ if unavailable(&e) => StoreError::Unavailable(e.to_string()),
            _ => StoreError::Database(e.to_string()),
        }
    }
}

/// Whether `e` says the database cannot write or be reached (rather than that this statement
/// is wrong or conflicts): the driver's I/O and pool errors; SQLite's I/O, full, read-only,
/// corrupt and cannot-open codes; PostgreSQL's connection (08), resources (53: disk full, out
/// of memory), operator intervention (57P: shutdown), system (58: I/O) and internal (XX)
/// classes and read-only transactions (25006).
fn unavailable(e: &sqlx::Error) -> bool {
    use sqlx::error::DatabaseError;
    use sqlx::Error as E;
    match e {
        E::Io(_) | E::PoolTimedOut | E::PoolClosed | E::WorkerCrashed | E::Tls(_) => true,
        E::Protocol(_) => true,
        E::Database(db) => {
            if let Some(sqlite) = db.try_downcast_ref::<sqlx::sqlite::SqliteError>() {
                let primary = sqlite
                    .code()
                    .and_then(|c| c.parse::<i32>().ok())
                    .map(|c| c & 0xff);
                // IOERR 10, CORRUPT 11, FULL 13, CANTOPEN 14, READONLY 8, NOTADB 26.
                return matches!(primary, Some(8 | 10 | 11 | 13 | 14 | 26));
            }
            let Some(state) = db.code() else {
                return false;
            };
            ["08", "53", "57P", "58", "XX", "25006"]
                .iter()
                .any(|class| state.starts_with(class))
        }
        _ => false,
    }
}

impl StoreError {
    /// True when a client-supplied value (a `before` cursor) is at fault, so the HTTP layer
    /// answers 400 instead of 500.
    pub fn is_client_error(&self) -> bool {
        matches!(self, StoreError::InvalidCursor)
    }
}
