//! The per-conversation [`InterruptQueue`]: users push follow-up messages while a
//! run works; the loop drains them between iterations; `close()` is atomic and hands back
//! whatever is left, so an accepted interrupt is always either seen by the agent or reported
//! as unprocessed.

use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// One queued follow-up message (as `done.unprocessed_interrupts` lists it).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Interrupt {
    pub id: Uuid,
    pub content: String,
}

/// Returned by [`InterruptQueue::push`] once the run's loop has ended.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("the run no longer accepts interrupts")]
pub struct QueueClosed;

/// What [`InterruptQueue::recall`] found.
#[derive(Debug, PartialEq, Eq)]
pub enum Recall {
    /// It was pending and is now removed.
    Recalled,
    /// Unknown id, or it has already been drained into the loop.
    NotPending,
}

#[derive(Default)]
struct State {
    open: bool,
    pending: Vec<Interrupt>,
}

/// A small mutex-protected state; no lock is ever held across an `.await`.
pub struct InterruptQueue {
    state: Mutex<State>,
    /// Woken on every push, for [`InterruptQueue::wait_pending`].
    pushed: tokio::sync::Notify,
}

impl Default for InterruptQueue {
    fn default() -> Self {
        Self::new()
    }
}

impl InterruptQueue {
    /// A new, open queue.
    pub fn new() -> Self {
        Self {
            state: Mutex::new(State {
                open: true,
                pending: Vec::new(),
            }),
            pushed: tokio::sync::Notify::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A poisoned lock only means another thread panicked mid-update of plain data; the
        // data is still a valid Vec, so keep going rather than propagate the panic.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queues a message with a fresh id.
    pub fn push(&self, content: impl Into<String>) -> Result<Interrupt, QueueClosed> {
        self.push_with_id(Uuid::new_v4(), content)
    }

    /// Queues a message under a caller-chosen id (the server persists first, then pushes).
    pub fn push_with_id(
        &self,
        id: Uuid,
        content: impl Into<String>,
    ) -> Result<Interrupt, QueueClosed> {
        let mut s = self.lock();
        if !s.open {
            return Err(QueueClosed);
        }
        let item = Interrupt {
            id,
            content: content.into(),
        };
        s.pending.push(item.clone());
        drop(s);
        self.pushed.notify_waiters();
        Ok(item)
    }

    /// Removes a pending message; fails once it has been drained.
    pub fn recall(&self, id: Uuid) -> Recall {
        let mut s = self.lock();
        match s.pending.iter().position(|i| i.id == id) {
            Some(pos) => {
                s.pending.remove(pos);
                Recall::Recalled
            }
            None => Recall::NotPending,
        }
    }

    /// Takes every pending message, in arrival order.
    pub fn drain(&self) -> Vec<Interrupt> {
        std::mem::take(&mut self.lock().pending)
    }

    pub fn has_pending(&self) -> bool {
        !self.lock().pending.is_empty()
    }

    /// Resolves once a message is pending (at once if one already is). The DAG engine waits on
    /// it while steps run, to stop launching new ones.
    pub async fn wait_pending(&self) {
        loop {
            let pushed = self.pushed.notified();
            tokio::pin!(pushed);
            // Registered before the check, so a push in between still wakes us.
            pushed.as_mut().enable();
            if self.has_pending() {
                return;
            }
            pushed.await;
        }
    }

    pub fn is_open(&self) -> bool {
        self.lock().open
    }

    /// Closes the queue and returns what it still held, atomically with respect to `push`.
    pub fn close(&self) -> Vec<Interrupt> {
        let mut s = self.lock();
        s.open = false;
        std::mem::take(&mut s.pending)
    }
}

#[cfg(test)]
mod tests;
