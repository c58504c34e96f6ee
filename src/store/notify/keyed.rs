//! Hints dispatched by key: a watcher of one key on one channel (a follower of one run on
//! `reagent_events`) is woken only by hints whose payload names that key, not by every hint the
//! process hears. The listener dispatches each hint once, so with a thousand followers a batch
//! of events wakes the followers of its runs, not all thousand.
//!
//! A wake-up is a [`Notify`] permit: hints that come while the watcher is busy collapse into
//! one, and none is lost between two waits. Hints that may have been lost (a payload naming no
//! key, [`Hint::Missed`](super::Hint::Missed)) wake every watcher of the channel, or of all of
//! them.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::Notify;

/// One watcher's wake-up and whether a hint may have been lost since it last woke.
#[derive(Debug, Default)]
struct Wake {
    notify: Notify,
    missed: AtomicBool,
}

/// Watchers by channel, then by key.
type Watchers = HashMap<&'static str, HashMap<String, Vec<Arc<Wake>>>>;

/// The process's watchers; fed by its listener.
#[derive(Debug, Default)]
pub(super) struct Keyed {
    watchers: Mutex<Watchers>,
    closed: AtomicBool,
}

impl Keyed {
    fn lock(&self) -> MutexGuard<'_, Watchers> {
        self.watchers.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Wakes the watchers of each comma-separated key of `payload` on `channel`; every watcher
    /// of the channel when `payload` names none.
    pub(super) fn notified(&self, channel: &str, payload: &str) {
        let watchers = self.lock();
        let Some(keys) = watchers.get(channel) else {
            return;
        };
        if payload.is_empty() {
            keys.values().flatten().for_each(|w| w.notify.notify_one());
            return;
        }
        for key in payload.split(',') {
            keys.get(key)
                .into_iter()
                .flatten()
                .for_each(|w| w.notify.notify_one());
        }
    }

    /// Hints may have been lost: every watcher wakes and is told so.
    pub(super) fn missed(&self) {
        for w in self.lock().values().flat_map(|k| k.values()).flatten() {
            w.missed.store(true, Ordering::Release);
            w.notify.notify_one();
        }
    }

    /// The listener stopped: every watcher wakes to hear it, now and from now on.
    pub(super) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        for w in self.lock().values().flat_map(|k| k.values()).flatten() {
            w.notify.notify_one();
        }
    }

    pub(super) fn watch(self: &Arc<Self>, channel: &'static str, key: &str) -> Watch {
        let wake = Arc::new(Wake::default());
        let mut watchers = self.lock();
        let keys = watchers.entry(channel).or_default();
        keys.entry(key.to_string()).or_default().push(wake.clone());
        Watch {
            keyed: self.clone(),
            channel,
            key: key.to_string(),
            wake,
        }
    }

    fn unwatch(&self, channel: &str, key: &str, wake: &Arc<Wake>) {
        let mut watchers = self.lock();
        let Some(keys) = watchers.get_mut(channel) else {
            return;
        };
        if let Some(list) = keys.get_mut(key) {
            list.retain(|w| !Arc::ptr_eq(w, wake));
            if list.is_empty() {
                keys.remove(key);
            }
        }
    }

    #[cfg(test)]
    pub(super) fn watched(&self) -> usize {
        self.lock()
            .values()
            .flat_map(|k| k.values())
            .map(Vec::len)
            .sum()
    }
}

/// Hints for one key on one channel; unregistered when dropped.
#[derive(Debug)]
pub struct Watch {
    keyed: Arc<Keyed>,
    channel: &'static str,
    key: String,
    wake: Arc<Wake>,
}

impl Watch {
    /// Waits for a hint that may concern this key: `Some(true)` when hints may have been lost
    /// meanwhile, `None` once the listener stopped.
    pub async fn next(&self) -> Option<bool> {
        if !self.keyed.closed.load(Ordering::Acquire) {
            self.wake.notify.notified().await;
        }
        if self.keyed.closed.load(Ordering::Acquire) {
            return None;
        }
        Some(self.wake.missed.swap(false, Ordering::AcqRel))
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.keyed.unwatch(self.channel, &self.key, &self.wake);
    }
}
