//! [`EventLog`]: the append-only, in-memory event log of one live run. The run's owner assigns
//! ids (1, 2, 3…) and appends; any number of subscribers replay and follow it, each holding only
//! a cursor, so a slow or vanished reader never blocks the run nor grows memory per reader, and
//! resuming from `Last-Event-ID` is just starting the cursor there.
//!
//! Appends come from whichever task emits (the agent, its tool tasks); the mutex orders them.
//! [`EventLog::seal`] stops ordinary appends so that the run's owner can write the final event
//! under a known id ([`EventLog::close_with`]) after persisting it.

use std::sync::{Arc, Mutex};

use futures::Stream;
use tokio::sync::{watch, Notify};

/// One event as it goes on the wire. Kept for the whole run, once per event: the name is one
/// of the SPEC's static names and the data exact-size.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoggedEvent {
    pub id: u64,
    pub name: &'static str,
    pub data: Box<str>,
}

impl LoggedEvent {
    /// An event read back from storage (its name mapped onto the static names).
    pub fn stored(id: u64, name: &str, data: String) -> Self {
        Self {
            id,
            name: crate::agent::events::static_name(name),
            data: data.into_boxed_str(),
        }
    }
}

#[derive(Default)]
struct Inner {
    events: Vec<Arc<LoggedEvent>>,
    /// Ordinary appends are refused (see [`EventLog::seal`]).
    sealed: bool,
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

    /// Appends an event with the next id and wakes subscribers; `false` (dropped) once sealed.
    pub fn append(&self, name: &'static str, data: String) -> bool {
        let id = {
            let mut g = self.lock();
            if g.sealed || g.closed {
                return false;
            }
            Self::push(&mut g, name, data)
        };
        self.version.send_replace(id);
        true
    }

    fn push(g: &mut Inner, name: &'static str, data: String) -> u64 {
        let id = g.events.len() as u64 + 1;
        g.events.push(Arc::new(LoggedEvent {
            id,
            name,
            data: data.into_boxed_str(),
        }));
        id
    }

    /// Refuses every later [`Self::append`]; returns the id the final event will get. The first
    /// call wins: `None` if the log was already sealed or closed.
    pub fn seal(&self) -> Option<u64> {
        let mut g = self.lock();
        if g.sealed || g.closed {
            return None;
        }
        g.sealed = true;
        Some(g.events.len() as u64 + 1)
    }

    /// Appends the final event (even when sealed) and closes the log.
    pub fn close_with(&self, name: &'static str, data: String) {
        {
            let mut g = self.lock();
            if g.closed {
                return;
            }
            Self::push(&mut g, name, data);
        }
        self.close();
    }

    /// No more events will come; subscribers end after draining.
    pub fn close(&self) {
        let last = {
            let mut g = self.lock();
            g.sealed = true;
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

    #[test]
    fn sealed_log_takes_only_the_final_event() {
        let log = EventLog::new();
        assert!(log.append("start", "{}".into()));
        assert_eq!(log.seal(), Some(2));
        assert_eq!(log.seal(), None, "only the first seal wins");
        assert!(!log.append("step", "{}".into()), "dropped after the seal");
        log.close_with("done", "{}".into());
        assert!(log.is_closed());
        let (events, closed) = log.since(0);
        assert!(closed);
        let names: Vec<_> = events.iter().map(|e| (e.id, e.name)).collect();
        assert_eq!(names, [(1, "start"), (2, "done")]);
        log.close_with("done", "{}".into());
        assert_eq!(log.len(), 2, "a closed log takes nothing more");
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
