//! Tool slots: how many tool calls execute at once, in one run and in the whole process. A
//! reply of thousands of calls (or many runs at once) then queues its calls instead of opening
//! a connection or a process for each at the same moment, so file descriptors and the event
//! loop stay available to everything else (`/healthz` included).

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The process-wide default of `tools.max_concurrent`.
pub const DEFAULT_PROCESS_SLOTS: usize = 64;
/// The default of `tools.max_concurrent_per_run`.
pub const DEFAULT_RUN_SLOTS: usize = 8;

/// The process's slots, from which each run gets its own [`ToolSlots`].
#[derive(Clone, Debug)]
pub struct ToolPool {
    process: Arc<Semaphore>,
    per_run: usize,
}

impl ToolPool {
    /// `process` slots in all, `per_run` of them for any one run (both at least 1).
    pub fn new(process: usize, per_run: usize) -> Self {
        Self {
            process: Arc::new(Semaphore::new(process.max(1))),
            per_run: per_run.max(1),
        }
    }

    /// A new run's slots.
    pub fn run_slots(&self) -> ToolSlots {
        ToolSlots {
            run: Arc::new(Semaphore::new(self.per_run)),
            process: self.process.clone(),
        }
    }
}

impl Default for ToolPool {
    fn default() -> Self {
        Self::new(DEFAULT_PROCESS_SLOTS, DEFAULT_RUN_SLOTS)
    }
}

/// One run's slots (shared by all steps of a DAG run): a call executes while it holds one of
/// the run's and one of the process's.
#[derive(Clone, Debug)]
pub struct ToolSlots {
    run: Arc<Semaphore>,
    process: Arc<Semaphore>,
}

impl Default for ToolSlots {
    /// A run of its own process pool of the default sizes (tests and benchmarks).
    fn default() -> Self {
        ToolPool::default().run_slots()
    }
}

/// Held while one call executes; dropping it frees the slots.
pub struct ToolSlot {
    _run: Option<OwnedSemaphorePermit>,
    _process: Option<OwnedSemaphorePermit>,
}

impl ToolSlots {
    /// Waits for a slot: the run's first, then the process's, always in this order, so a run
    /// holds a process slot only while one of its calls executes.
    pub async fn acquire(&self) -> ToolSlot {
        // The semaphores are never closed, so acquiring cannot fail; if it did, the call would
        // run unbounded rather than not at all.
        let run = self.run.clone().acquire_owned().await.ok();
        let process = self.process.clone().acquire_owned().await.ok();
        ToolSlot {
            _run: run,
            _process: process,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_run_gets_at_most_its_share_and_the_process_at_most_its_pool() {
        let pool = ToolPool::new(3, 2);
        let (a, b) = (pool.run_slots(), pool.run_slots());
        let a1 = a.acquire().await;
        let _a2 = a.acquire().await;
        let third = tokio::time::timeout(std::time::Duration::from_millis(20), a.acquire()).await;
        assert!(
            third.is_err(),
            "a run's third call must wait for its own slot"
        );
        let _b1 = b.acquire().await;
        let fourth = tokio::time::timeout(std::time::Duration::from_millis(20), b.acquire()).await;
        assert!(fourth.is_err(), "the process pool of 3 is used up");
        drop(a1);
        let freed = tokio::time::timeout(std::time::Duration::from_secs(1), b.acquire()).await;
        assert!(freed.is_ok(), "a freed slot goes to the waiting run");
    }
}
