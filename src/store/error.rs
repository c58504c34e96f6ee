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
            _ => StoreError::Database(e.to_string()),
        }
    }
}

impl StoreError {
    /// True when a client-supplied value (a `before` cursor) is at fault, so the HTTP layer
    /// answers 400 instead of 500.
    pub fn is_client_error(&self) -> bool {
        matches!(self, StoreError::InvalidCursor)
    }
}
