//! [`EventLog`]: the append-only, in-memory event log of one live run. The run's owner assigns
//! ids (1, 2, 3…) and appends; any number of subscribers replay and follow it, each holding only
//! a cursor, so a slow or vanished reader never blocks the run nor grows memory per reader, and
//! resuming from `Last-Event-ID` is just starting the cursor there.
//!
//! Appends come from whichever task emits (the agent, its tool tasks); the mutex orders them.
//! [`EventLog::seal`] stops ordinary appends so that the run's owner can write the final event
//! under a known id ([`EventLog::close_with`]) after persisting it.
//!
//! Memory: the log only needs the events someone in memory has yet to read. Readers hold a
//! *pin* at their cursor ([`EventLog::pin`]); once events are persisted the writer calls
//! [`EventLog::release`], which drops the events at or below both the persisted id and every
//! pin. With no pin at all nothing is released. A reader that wants ids below what is still
//! held ([`Subscription::missing`]) reads them from the database first.
//!
//! Event ids: readers only see ids up to the log's *ceiling*, the highest id whose reservation
//! is committed (`runs.event_ceiling`, raised by the event writer a block ahead of use, see
//! [`EventLog::raise_ceiling`]). Events are streamed before they are stored, so after a crash
//! some ids a client saw may be missing from the database; recovery numbers its tail above the
//! committed ceiling, and so no id ever names two different events.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use futures::Stream;
use tokio::sync::Notify;

/// One event as it goes on the wire. Kept for the whole run, once per event: the name is one
/// of the protocol's static names and the data exact-size.
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

    /// The event as an encoder reads it: answer deltas borrowed, the rest typed.
    pub fn view(&self) -> crate::agent::events::EventView<'_> {
        crate::agent::events::EventView::read(self.name, &self.data)
    }
}

#[derive(Default)]
struct Inner {
    /// Events `base + 1 ..`; those up to `base` were released.
    events: VecDeque<Arc<LoggedEvent>>,
    base: u64,
    /// Reader pins: pin id → the reader's cursor and, while it waits, its waker.
    pins: HashMap<u64, Reader>,
    next_pin: u64,
    /// Ordinary appends are refused (see [`EventLog::seal`]).
    sealed: bool,
    closed: bool,
    /// Readers see ids up to here only (the reservation committed so far).
    ceiling: u64,
}

/// A pinned reader: it has read every id up to `cursor`; `waker` is set while it waits for more.
struct Reader {
    cursor: u64,
    waker: Option<Waker>,
}

impl Inner {
    /// Wakes the readers waiting for events (under the lock, so none registers in between).
    fn wake_readers(&mut self) {
        for reader in self.pins.values_mut() {
            if let Some(waker) = reader.waker.take() {
                waker.wake();
            }
        }
    }

    /// Moves the reader `pin` to `cursor` (never back).
    fn advance(&mut self, pin: u64, cursor: u64) {
        if let Some(r) = self.pins.get_mut(&pin) {
            r.cursor = cursor.max(r.cursor);
        }
    }

    fn next_id(&self) -> u64 {
        self.base + self.events.len() as u64 + 1
    }

    /// Events with id > `after` still held (ids at or below `base` are gone) and visible
    /// (at or below the ceiling).
    fn since(&self, after: u64) -> Vec<Arc<LoggedEvent>> {
        self.events.range(self.visible(after)).cloned().collect()
    }

    /// Positions in `events` of the ids after `after` that readers may see.
    fn visible(&self, after: u64) -> std::ops::Range<usize> {
        let held = self.events.len() as u64;
        let start = after.saturating_sub(self.base).min(held) as usize;
        let end = self.ceiling.saturating_sub(self.base).min(held) as usize;
        start..end.max(start)
    }
}

/// A reader's pin (see [`EventLog::pin`]); unpinned on drop.
pub struct Pin {
    log: Arc<EventLog>,
    id: u64,
}

impl Pin {
    /// Events after `cursor` (and whether the log is closed); the pin moves to `cursor`, i.e.
    /// the reader is done with every id up to it.
    pub fn since(&self, cursor: u64) -> (Vec<Arc<LoggedEvent>>, bool) {
        let mut g = self.log.lock();
        g.advance(self.id, cursor);
        (g.since(cursor), g.closed)
    }

    pub fn log(&self) -> &Arc<EventLog> {
        &self.log
    }
}

impl Drop for Pin {
    fn drop(&mut self) {
        self.log.lock().pins.remove(&self.id);
    }
}

/// Shared by the run task (writer) and SSE subscribers (readers).
pub struct EventLog {
    inner: Mutex<Inner>,
    /// Woken once, by [`EventLog::close`], for [`EventLog::closed`].
    closing: Notify,
}

impl Default for EventLog {
    fn default() -> Self {
        Self::new()
    }
}

impl EventLog {
    /// A log whose readers see every event at once (no id reservation: for logs that are not a
    /// stored run's, and tests).
    pub fn new() -> Self {
        Self::with_ceiling(u64::MAX)
    }

    /// A log whose readers see ids up to `ceiling` until [`Self::raise_ceiling`] says more
    /// are reserved.
    pub fn with_ceiling(ceiling: u64) -> Self {
        Self {
            inner: Mutex::new(Inner {
                ceiling,
                ..Inner::default()
            }),
            closing: Notify::new(),
        }
    }

    /// The log of a run resumed after its previous process stopped: ids go on after `base`
    /// (everything up to it is stored or was lost in the crash), readers see up to `ceiling`.
    pub fn resumed(base: u64, ceiling: u64) -> Self {
        let log = Self::with_ceiling(ceiling);
        log.lock().base = base;
        log
    }

    /// The highest id readers may see.
    pub fn ceiling(&self) -> u64 {
        self.lock().ceiling
    }

    /// Ids up to `ceiling` are reserved in a committed write: readers may see them now. Never
    /// lowers the ceiling.
    pub fn raise_ceiling(&self, ceiling: u64) {
        let mut g = self.lock();
        if ceiling > g.ceiling {
            g.ceiling = ceiling;
            g.wake_readers();
        }
    }

    /// Every event with id > `after` still held, visible or not: what the writer stores.
    pub fn pending(&self, after: u64) -> Vec<Arc<LoggedEvent>> {
        let g = self.lock();
        let start = after.saturating_sub(g.base).min(g.events.len() as u64) as usize;
        g.events.range(start..).cloned().collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Appends an event with the next id and wakes subscribers; `false` (dropped) once sealed.
    pub fn append(&self, name: &'static str, data: String) -> bool {
        let mut g = self.lock();
        if g.sealed || g.closed {
            return false;
        }
        Self::push(&mut g, name, data);
        g.wake_readers();
        true
    }

    fn push(g: &mut Inner, name: &'static str, data: String) {
        let id = g.next_id();
        g.events.push_back(Arc::new(LoggedEvent {
            id,
            name,
            data: data.into_boxed_str(),
        }));
    }

    /// Refuses every later [`Self::append`]; returns the id the final event will get. The first
    /// call wins: `None` if the log was already sealed or closed.
    pub fn seal(&self) -> Option<u64> {
        let mut g = self.lock();
        if g.sealed || g.closed {
            return None;
        }
        g.sealed = true;
        Some(g.next_id())
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
        {
            let mut g = self.lock();
            g.sealed = true;
            g.closed = true;
            // Even when nothing new was appended, so that waiting readers see `closed`.
            g.wake_readers();
        }
        self.closing.notify_waiters();
    }

    /// Resolves once the log is closed, without waking on every append.
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

    pub fn is_closed(&self) -> bool {
        self.lock().closed
    }

    /// Events appended so far (released ones included).
    pub fn len(&self) -> usize {
        (self.lock().next_id() - 1) as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Events with id > `after` still held, and whether the log is closed. A reader that
    /// must not miss any holds a [`Pin`] and reads through it.
    pub fn since(&self, after: u64) -> (Vec<Arc<LoggedEvent>>, bool) {
        let g = self.lock();
        (g.since(after), g.closed)
    }

    /// Ids released so far (`1..=released()` are no longer held).
    pub fn released(&self) -> u64 {
        self.lock().base
    }

    /// Events held in memory (appended and not released).
    pub fn held(&self) -> usize {
        self.lock().events.len()
    }

    /// Registers a reader at `cursor` (raised to what is still held). Returns the pin and the
    /// cursor it got: above `cursor` when ids were already released.
    pub fn pin(self: &Arc<Self>, cursor: u64) -> (Pin, u64) {
        let mut g = self.lock();
        let at = cursor.max(g.base);
        let id = g.next_pin;
        g.next_pin += 1;
        g.pins.insert(
            id,
            Reader {
                cursor: at,
                waker: None,
            },
        );
        (
            Pin {
                log: self.clone(),
                id,
            },
            at,
        )
    }

    /// Drops the events up to `persisted` that every pinned reader has read. Without pins,
    /// nothing is released (a run nobody follows keeps its log, as the first reader may come
    /// at any time and would otherwise need the database for all of it).
    pub fn release(&self, persisted: u64) {
        let mut g = self.lock();
        let Some(lowest) = g.pins.values().map(|r| r.cursor).min() else {
            return;
        };
        let upto = persisted.min(lowest);
        while g.base < upto && !g.events.is_empty() {
            g.events.pop_front();
            g.base += 1;
        }
        // A burst the writer lagged behind grew the queue; give the room back once it drained.
        let (held, room) = (g.events.len(), g.events.capacity());
        if room > 64 && held * 4 < room {
            g.events.shrink_to(held * 2);
        }
    }

    /// Replays events after `after`, then follows until the log closes. Events already
    /// released are not in it: see [`Subscription::missing`].
    pub fn subscribe(self: &Arc<Self>, after: u64) -> Subscription {
        let (pin, at) = self.pin(after);
        let missing = (at > after).then_some((after, at));
        let events = Follow {
            pin,
            cursor: at,
            ready: VecDeque::new(),
        };
        Subscription {
            missing,
            events: Box::pin(events),
        }
    }
}

/// A subscription's events: those ready are taken from the log a batch at a time, under one
/// lock; with none, the reader leaves its waker in its pin and the next append wakes it.
struct Follow {
    pin: Pin,
    /// The id of the last event handed out.
    cursor: u64,
    ready: VecDeque<Arc<LoggedEvent>>,
}

impl Stream for Follow {
    type Item = Arc<LoggedEvent>;

    fn poll_next(self: std::pin::Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.ready.is_empty() {
            let mut g = this.pin.log.lock();
            g.advance(this.pin.id, this.cursor);
            let range = g.visible(this.cursor);
            this.ready.extend(g.events.range(range).cloned());
            if this.ready.is_empty() {
                if g.closed {
                    return Poll::Ready(None);
                }
                if let Some(r) = g.pins.get_mut(&this.pin.id) {
                    match &r.waker {
                        Some(w) if w.will_wake(cx.waker()) => {}
                        _ => r.waker = Some(cx.waker().clone()),
                    }
                }
                return Poll::Pending;
            }
        }
        let ev = this.ready.pop_front();
        if let Some(ev) = &ev {
            this.cursor = ev.id;
        }
        Poll::Ready(ev)
    }
}

/// A live subscription: `events` from the log, after the range `missing` (exclusive start,
/// inclusive end) that was already released and must be read from the database first.
pub struct Subscription {
    pub missing: Option<(u64, u64)>,
    pub events: futures::stream::BoxStream<'static, Arc<LoggedEvent>>,
}

#[cfg(test)]
mod tests;
