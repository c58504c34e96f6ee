//! [`EventLog`]: the append-only, in-memory event log of one live run. The run's owner assigns
//! ids (1, 2, 3…) and appends; any number of subscribers replay and follow it, each holding only
//! a cursor, so a slow or vanished reader never blocks the run nor grows memory per reader, and
//! resuming from `Last-Event-ID` is just starting the cursor there.

use std::sync::{Arc, Mutex};

use futures::Stream;
use tokio::sync::{watch, Notify};

/// One event as it goes on the wire.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoggedEvent {
    pub id: u64,
    pub name: String,
    pub data: String,
}

#[derive(Default)]
struct Inner {
    events: Vec<Arc<LoggedEvent>>,
    closed: bool,
}

/// Shared by the run task (writer) and SSE subscribers (readers).
pub struct EventLog {
    inner: Mutex<Inner>,
    /// Last appended id; `closed` is signalled by a final bump after setting the flag.
    version: watch::Sender<u64>,
    /// Woken once, by [`EventLog::close`], for [`EventLog::closed`].
    closing: Notify,
}

impl Default for EventLog {
    fn default() -> Self {
        Self::new()
    }
}

impl EventLog {
    pub fn new() -> Self {
        Self {
            inner: Mutex::new(Inner::default()),
            version: watch::channel(0).0,
            closing: Notify::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Appends an event with the next id and wakes subscribers.
    pub fn append(&self, name: &str, data: String) -> Arc<LoggedEvent> {
        let ev = {
            let mut g = self.lock();
            let ev = Arc::new(LoggedEvent {
                id: g.events.len() as u64 + 1,
                name: name.to_string(),
                data,
            });
            g.events.push(ev.clone());
            ev
        };
        self.version.send_replace(ev.id);
        ev
    }

    /// No more events will come; subscribers end after draining.
    pub fn close(&self) {
        let last = {
            let mut g = self.lock();
            g.closed = true;
            g.events.len() as u64
        };
        // Bump even when nothing new was appended so waiters re-check `closed`.
        self.version.send_modify(|v| *v = last.max(*v));
        self.version.send_modify(|_| {});
        self.closing.notify_waiters();
    }

    /// Resolves once the log is closed, without waking on every append (unlike [`Self::watch`]).
    pub async fn closed(&self) {
        loop {
            let notified = self.closing.notified();
            tokio::pin!(notified);
            // Registered before the check, so a `close` in between is not missed.
            notified.as_mut().enable();
            if self.is_closed() {
                return;
            }
            notified.await;
        }
    }

    /// A receiver that changes whenever an event is appended or the log closes.
    pub fn watch(&self) -> watch::Receiver<u64> {
        self.version.subscribe()
    }

    pub fn is_closed(&self) -> bool {
        self.lock().closed
    }

    pub fn len(&self) -> usize {
        self.lock().events.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Events with id > `after`, and whether the log is closed.
    pub fn since(&self, after: u64) -> (Vec<Arc<LoggedEvent>>, bool) {
        let g = self.lock();
        let start = (after as usize).min(g.events.len());
        (g.events[start..].to_vec(), g.closed)
    }

    /// Replays events after `after`, then follows until the log closes.
    pub fn subscribe(
        self: &Arc<Self>,
        after: u64,
    ) -> impl Stream<Item = Arc<LoggedEvent>> + Send + 'static {
        let log = self.clone();
        let rx = self.version.subscribe();
        futures::stream::unfold(
            (log, rx, after, Vec::<Arc<LoggedEvent>>::new().into_iter()),
            |(log, mut rx, mut cursor, mut pending)| async move {
                loop {
                    if let Some(ev) = pending.next() {
                        cursor = ev.id;
                        return Some((ev, (log, rx, cursor, pending)));
                    }
                    rx.borrow_and_update();
                    let (batch, closed) = log.since(cursor);
                    if !batch.is_empty() {
                        pending = batch.into_iter();
                        continue;
                    }
                    if closed {
                        return None;
                    }
                    if rx.changed().await.is_err() {
                        return None;
                    }
                }
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;

    #[tokio::test]
    async fn replay_then_follow_then_end() {
        let log = Arc::new(EventLog::new());
        log.append("start", "{}".into());
        log.append("step", "{}".into());
        let sub = log.subscribe(1);
        let writer = {
            let log = log.clone();
            tokio::spawn(async move {
                for _ in 0..50 {
                    log.append("step", "{}".into());
                    tokio::task::yield_now().await;
                }
                log.append("done", "{}".into());
                log.close();
            })
        };
        let ids: Vec<u64> = sub.map(|e| e.id).collect().await;
        writer.await.unwrap();
        assert_eq!(ids, (2..=53).collect::<Vec<_>>());
    }

    #[tokio::test]
    async fn subscriber_after_close_gets_the_rest_and_ends() {
        let log = Arc::new(EventLog::new());
        for _ in 0..3 {
            log.append("x", "{}".into());
        }
        log.close();
        let ids: Vec<u64> = log.subscribe(0).map(|e| e.id).collect().await;
        assert_eq!(ids, [1, 2, 3]);
        let none: Vec<u64> = log.subscribe(3).map(|e| e.id).collect().await;
        assert!(none.is_empty());
        let beyond: Vec<u64> = log.subscribe(99).map(|e| e.id).collect().await;
        assert!(beyond.is_empty());
    }

    #[tokio::test]
    async fn closed_resolves_on_close_only() {
        let log = Arc::new(EventLog::new());
        let waiter = tokio::spawn({
            let log = log.clone();
            async move { log.closed().await }
        });
        log.append("step", "{}".into());
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        log.close();
        waiter.await.unwrap();
        // Already closed: resolves at once.
        log.closed().await;
    }
}
