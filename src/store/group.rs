//! Group commit for small writes that many runs make at about the same time (a run's start):
//! each caller queues its item and waits for its turn; whoever gets the turn writes every item
//! queued meanwhile at once and answers each caller. Alone, a caller writes at once; under load
//! the queue fills while the previous write is in flight, so N concurrent callers cost a few
//! statements instead of N of each.
//!
//! The write runs in a task of its own: the caller that happens to do it may be cancelled (a
//! run's task stopped by a takeover) without leaving the others it carries unanswered.

use std::future::Future;
use std::sync::Mutex;

use tokio::sync::oneshot;

use super::StoreError;

/// Callers waiting for the next group write, each with where to report its outcome.
pub(crate) type Waiting<T, R> = Vec<(T, oneshot::Sender<Result<R, StoreError>>)>;

/// A queue of items and the turn to write them.
pub(crate) struct Grouped<T, R> {
    queue: Mutex<Waiting<T, R>>,
    turn: tokio::sync::Mutex<()>,
}

impl<T, R> Default for Grouped<T, R> {
    fn default() -> Self {
        Self {
            queue: Mutex::new(Vec::new()),
            turn: tokio::sync::Mutex::new(()),
        }
    }
}

impl<T, R> std::fmt::Debug for Grouped<T, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Grouped").finish_non_exhaustive()
    }
}

impl<T: Send + 'static, R: Send + 'static> Grouped<T, R> {
    /// Queues `item` and resolves with its outcome once a group write carried it: this
    /// caller's own (`write` of everything queued when its turn came), or an earlier one's,
    /// which answered before letting the turn go. `turn`: a lock to take turns on instead of
    /// the group's own — SQLite's write gate, so that the batch is taken only once the
    /// database is free and holds everything that arrived while it was busy (taken before,
    /// groups were several times smaller and short runs/s fell by a third).
    pub async fn join<F, Fut>(
        &self,
        item: T,
        turn: Option<&tokio::sync::Mutex<()>>,
        write: F,
    ) -> Result<R, StoreError>
    where
        F: FnOnce(Waiting<T, R>) -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let (reply, done) = oneshot::channel();
        self.lock().push((item, reply));
        {
            let _turn = turn.unwrap_or(&self.turn).lock().await;
            let batch = std::mem::take(&mut *self.lock());
            if !batch.is_empty() {
                // Awaited under the turn; a panic in it drops the replies (answered below).
                let _ = tokio::spawn(write(batch)).await;
            }
        }
        done.await
            .unwrap_or_else(|_| Err(StoreError::Database("a grouped write was lost".into())))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Waiting<T, R>> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use super::Grouped;

    /// Callers arriving while a write is in flight share the next one, each answered with
    /// its own outcome.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_callers_share_writes() {
        let group: Arc<Grouped<u32, u32>> = Arc::default();
        let writes = Arc::new(AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for i in 0..50u32 {
            let (group, writes) = (group.clone(), writes.clone());
            tasks.push(tokio::spawn(async move {
                group
                    .join(i, None, move |batch| async move {
                        writes.fetch_add(1, Ordering::SeqCst);
                        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                        for (item, reply) in batch {
                            let _ = reply.send(Ok(item * 2));
                        }
                    })
                    .await
            }));
        }
        for (i, t) in tasks.into_iter().enumerate() {
            assert_eq!(t.await.unwrap().unwrap(), 2 * i as u32);
        }
        let n = writes.load(Ordering::SeqCst);
        assert!(n < 50, "{n} writes for 50 concurrent callers");
    }

    /// A write that answers nobody (it failed to) is reported, not awaited forever.
    #[tokio::test]
    async fn an_unanswered_caller_gets_an_error() {
        let group: Grouped<u32, u32> = Grouped::default();
        let r = group
            .join(1, None, |batch| async move { drop(batch) })
            .await;
        assert!(r.is_err());
    }
}
