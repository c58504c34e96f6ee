//! PostgreSQL `LISTEN/NOTIFY` as a wake-up hint between instances (docs/deployment.md). One listener
//! connection per process, started by [`Store::listen`], fans every notification out to any
//! number of in-process subscribers. A notification is only a hint: it can be lost (the
//! listener's connection dropped, a subscriber fell behind), so every subscriber also gets
//! [`Hint::Missed`] whenever that may have happened, and must then re-read from the rows
//! whatever it waits for. SQLite serves one process: there is no one to hear, so nothing is
//! started and [`Store::notify`] does nothing.

use std::sync::Arc;
use std::time::Duration;

use sqlx::postgres::PgListener;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use super::{Backend, Store, StoreError};

mod keyed;
#[cfg(test)]
mod tests;

use keyed::Keyed;
pub use keyed::Watch;

/// Woken once per committed batch of events; the payload lists the batch's run ids.
pub const EVENTS_CHANNEL: &str = "reagent_events";
/// Woken when a command row (interrupt, recall, cancel, approval decision) is written; the
/// payload is the run id it is for.
pub const COMMANDS_CHANNEL: &str = "reagent_commands";
/// "A client follows this run here": the payload is the run id; its owner then writes the
/// run's events as they come (`runs/core/persist/hot.rs`), for a while.
pub const FOLLOW_CHANNEL: &str = "reagent_follow";

/// How many hints a subscriber may be behind before it is told it missed some.
const FANOUT_CAPACITY: usize = 4096;
/// Pause after a listener error before trying again.
const RETRY_PAUSE: Duration = Duration::from_millis(500);

/// What a subscriber hears.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Hint {
    Notified {
        channel: String,
        payload: String,
    },
    /// Notifications may have been lost (listener reconnected, or this subscriber lagged):
    /// re-read what is pending.
    Missed,
}

/// The process's listener; dropping it does not stop it, [`Notifier::stop`] does.
#[derive(Clone, Debug)]
pub struct Notifier {
    tx: broadcast::Sender<Hint>,
    keyed: Arc<Keyed>,
    stop: CancellationToken,
}

/// A subscription; [`Subscription::recv`] turns lag into [`Hint::Missed`].
#[derive(Debug)]
pub struct Subscription {
    rx: broadcast::Receiver<Hint>,
}

impl Subscription {
    /// The next hint; `None` once the notifier stopped.
    pub async fn recv(&mut self) -> Option<Hint> {
        match self.rx.recv().await {
            Ok(hint) => Some(hint),
            Err(broadcast::error::RecvError::Lagged(_)) => Some(Hint::Missed),
            Err(broadcast::error::RecvError::Closed) => None,
        }
    }

    /// A hint already waiting, without waiting (lag is [`Hint::Missed`]); `None` when none.
    pub fn try_recv(&mut self) -> Option<Hint> {
        match self.rx.try_recv() {
            Ok(hint) => Some(hint),
            Err(broadcast::error::TryRecvError::Lagged(_)) => Some(Hint::Missed),
            Err(_) => None,
        }
    }
}

impl Notifier {
    pub fn subscribe(&self) -> Subscription {
        Subscription {
            rx: self.tx.subscribe(),
        }
    }

    /// The hints on `channel` whose payload names `key` (or names none, or may have been
    /// lost), without waking for anyone else's: what a follower of one run waits on.
    pub fn watch(&self, channel: &'static str, key: &str) -> Watch {
        self.keyed.watch(channel, key)
    }

    pub fn stop(&self) {
        self.stop.cancel();
    }

    /// Hands `hint` to the watchers of its key and to every subscriber.
    fn dispatch(&self, hint: Hint) {
        match &hint {
            Hint::Notified { channel, payload } => self.keyed.notified(channel, payload),
            Hint::Missed => self.keyed.missed(),
        }
        // No subscriber yet is not an error.
        let _ = self.tx.send(hint);
    }
}

impl Store {
    /// Starts this process's listener on `channels` (PostgreSQL); `None` on SQLite. Fails only
    /// when the first connection cannot be made; later losses reconnect by themselves and are
    /// reported to subscribers as [`Hint::Missed`].
    pub async fn listen(&self, channels: &[&str]) -> Result<Option<Notifier>, StoreError> {
        let Backend::Postgres(pool) = &self.backend else {
            return Ok(None);
        };
        let mut listener = PgListener::connect_with(pool).await?;
        listener.listen_all(channels.iter().copied()).await?;
        let (tx, _) = broadcast::channel(FANOUT_CAPACITY);
        let notifier = Notifier {
            tx,
            keyed: Arc::default(),
            stop: CancellationToken::new(),
        };
        let stop = notifier.stop.clone();
        let out = notifier.clone();
        tokio::spawn(async move {
            loop {
                let next = tokio::select! {
                    _ = stop.cancelled() => break,
                    next = listener.try_recv() => next,
                };
                let hint = match next {
                    Ok(Some(n)) => Hint::Notified {
                        channel: n.channel().to_string(),
                        payload: n.payload().to_string(),
                    },
                    // The connection was lost and is re-made on the next call (sqlx LISTENs
                    // again on the new one): what was sent meanwhile is gone.
                    Ok(None) => Hint::Missed,
                    Err(e) => {
                        tracing::warn!(error = %e, "the notification listener failed; retrying");
                        out.dispatch(Hint::Missed);
                        tokio::time::sleep(RETRY_PAUSE).await;
                        continue;
                    }
                };
                out.dispatch(hint);
            }
            out.keyed.close();
        });
        Ok(Some(notifier))
    }

    /// Sends `payload` on `channel` (PostgreSQL, delivered when the statement commits); a
    /// no-op on SQLite. Inside a transaction, use `SELECT pg_notify($1, $2)` on it instead so
    /// the hint goes out only with the commit.
    pub async fn notify(&self, channel: &str, payload: &str) -> Result<(), StoreError> {
        if let Backend::Postgres(pool) = &self.backend {
            sqlx::query("SELECT pg_notify($1, $2)")
                .bind(channel)
                .bind(payload)
                .execute(pool)
                .await?;
        }
        Ok(())
    }
}
