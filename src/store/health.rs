//! Whether the database takes writes, and the readiness check built on it (`/readyz`).
//!
//! Every write goes through `with_writer!`, which reports its outcome here: a write that fails
//! because the database cannot write (a full disk, an I/O error, a lost connection; see
//! [`StoreError::Unavailable`]) marks the store as failing, and any write that commits clears
//! it. While failing, the readiness check rewrites one probe row, so readiness comes back as
//! soon as writes commit again even when nothing else writes.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use super::{with_writer, Store, StoreError};

/// The longest `/readyz` waits for each of its checks (the database's answer, the probe
/// write): during an outage it answers 503 at once instead of waiting out the pool's
/// acquire timeout.
pub const READY_TIMEOUT: Duration = Duration::from_secs(1);

/// The write outcomes seen so far, and the SQLite file the store opened.
#[derive(Debug, Default)]
pub(crate) struct Health {
    /// Read on every write: the mutex is only taken when this is set or a write failed.
    failing: AtomicBool,
    /// Why the last write failed, while `failing`.
    reason: Mutex<Option<String>>,
    /// SQLite file databases: the path and its identity when opened.
    file: Option<FileId>,
}

/// A file by path and identity (device, inode): a file deleted, or replaced by another under
/// the same name, no longer matches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FileId {
    path: PathBuf,
    identity: (u64, u64),
}

impl FileId {
    /// The identity of the file at `path` now, `None` where it cannot be read.
    pub(crate) fn of(path: PathBuf) -> Option<FileId> {
        let identity = identity(&path)?;
        Some(FileId { path, identity })
    }

    /// `Err` naming the problem when the file at the path is gone or another file.
    fn check(&self) -> Result<(), String> {
        match identity(&self.path) {
            Some(now) if now == self.identity => Ok(()),
            Some(_) => {
                tracing::error!(path = %self.path.display(), "the SQLite database file was replaced under the running server");
                Err("the SQLite database file was replaced under the running server".into())
            }
            None => {
                tracing::error!(path = %self.path.display(), "the SQLite database file was deleted under the running server");
                Err("the SQLite database file was deleted under the running server".into())
            }
        }
    }
}

#[cfg(unix)]
fn identity(path: &std::path::Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.dev(), meta.ino()))
}

/// Elsewhere only existence is checked.
#[cfg(not(unix))]
fn identity(path: &std::path::Path) -> Option<(u64, u64)> {
    std::fs::metadata(path).ok().map(|_| (0, 0))
}

impl Health {
    pub(crate) fn with_file(file: Option<FileId>) -> Self {
        Health {
            file,
            ..Health::default()
        }
    }

    /// Records a write's outcome and passes it on.
    pub(crate) fn wrote<T>(&self, outcome: Result<T, StoreError>) -> Result<T, StoreError> {
        match &outcome {
            Ok(_) if self.failing.load(Ordering::Acquire) => {
                *self.lock() = None;
                self.failing.store(false, Ordering::Release);
                tracing::info!("database writes commit again");
            }
            Err(StoreError::Unavailable(reason)) => {
                let mut r = self.lock();
                if r.is_none() {
                    tracing::error!(error = %reason, "database writes are failing; /readyz answers 503 until one commits");
                }
                *r = Some(reason.clone());
                self.failing.store(true, Ordering::Release);
            }
            _ => {}
        }
        outcome
    }

    /// Why writes are failing, `None` when the last one committed.
    fn failing(&self) -> Option<String> {
        if !self.failing.load(Ordering::Acquire) {
            return None;
        }
        self.lock().clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<String>> {
        self.reason.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Store {
    /// Whether the store can serve: its SQLite file is still the one it opened, the database
    /// answers within [`READY_TIMEOUT`], and, when the last write failed, a probe write commits
    /// within it. `Err` says what is wrong, in words fit for `/readyz`'s public answer (the
    /// driver's detail goes to the log).
    pub async fn readiness(&self) -> Result<(), String> {
        if let Some(file) = &self.health.file {
            file.check()?;
        }
        match tokio::time::timeout(READY_TIMEOUT, self.ping()).await {
            Err(_) => {
                return Err(format!(
                    "the database did not answer within {READY_TIMEOUT:?}"
                ))
            }
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "readiness check failed");
                return Err("the database is unreachable".into());
            }
            Ok(Ok(())) => {}
        }
        let Some(reason) = self.health.failing() else {
            return Ok(());
        };
        match tokio::time::timeout(READY_TIMEOUT, self.probe_write()).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(format!(
                "database writes are failing: {}",
                short(&e, &reason)
            )),
            Err(_) => Err(format!(
                "database writes are failing: a probe write did not commit within {READY_TIMEOUT:?}"
            )),
        }
    }

    /// Rewrites the probe row: a real write, committed like any other.
    async fn probe_write(&self) -> Result<(), StoreError> {
        let (_, micros) = super::models::now();
        let _turn = self.write_turn().await;
        with_writer!(self, |pool| {
            sqlx::query("UPDATE write_probe SET at = $1 WHERE id = 1")
                .bind(micros)
                .execute(pool)
                .await?;
        });
        Ok(())
    }
}

/// The failure in a few words: "disk full", "I/O error"… from the probe's error, else the
/// recorded reason.
fn short(e: &StoreError, recorded: &str) -> String {
    let text = match e {
        StoreError::Unavailable(reason) => reason.as_str(),
        _ => recorded,
    };
    let lower = text.to_lowercase();
    let kind = if lower.contains("full") || lower.contains("no space") {
        "the disk is full"
    } else if lower.contains("i/o") {
        "I/O error"
    } else if lower.contains("readonly") || lower.contains("read-only") {
        "the database is read-only"
    } else {
        "the database refuses writes"
    };
    kind.to_string()
}
