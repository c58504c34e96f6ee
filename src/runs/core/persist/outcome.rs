//! The other half of [`EventWriter`]'s tick: committing the planned batches and what each
//! outcome does to a run's cursor, its log, its waiter and, when fenced, its task.

use super::{EventWriter, PersistError, Planned, MAX_FAILURES};
use crate::store::{RunBatch, StoreError, Written};
use std::sync::atomic::Ordering;

impl EventWriter {
    /// Commits one tick; `false` when some run's write failed.
    pub(super) async fn write(&self, planned: Vec<Planned>) -> bool {
        let (mut planned, suspects): (Vec<Planned>, Vec<Planned>) =
            planned.into_iter().partition(|p| !p.suspect);
        let mut all = true;
        for p in &suspects {
            match self
                .store
                .write_batches(std::slice::from_ref(&p.batch))
                .await
            {
                Ok(f) => self.outcome(p, f.first().copied()),
                Err(e) => {
                    self.failed(p, e);
                    all = false;
                }
            }
        }
        if planned.is_empty() {
            return all;
        }
        let batches: Vec<RunBatch> = planned
            .iter_mut()
            .map(|p| std::mem::take(&mut p.batch))
            .collect();
        match self.store.write_batches(&batches).await {
            Ok(written) => {
                for (p, w) in planned.iter().zip(written) {
                    self.outcome(p, Some(w));
                }
                all
            }
            Err(e) if planned.len() == 1 => {
                self.failed(&planned[0], e);
                false
            }
            Err(e) => {
                // One run's rows may be at fault: write each run on its own so the others go on.
                tracing::warn!(error = %e, runs = planned.len(), "shared event write failed; retrying run by run");
                for (p, b) in planned.iter().zip(&batches) {
                    match self.store.write_batches(std::slice::from_ref(b)).await {
                        Ok(f) => self.outcome(p, f.first().copied()),
                        Err(e) => {
                            self.failed(p, e);
                            all = false;
                        }
                    }
                }
                all
            }
        }
    }

    /// Records what the store did with a run's batch.
    pub(super) fn outcome(&self, p: &Planned, w: Option<Written>) {
        match w {
            Some(Written::Fenced) => self.fenced(p),
            Some(Written::Stored(f)) => self.written(p, Ok(f)),
            Some(Written::Held) => self.held(p),
            None => self.written(p, Ok(false)),
        }
    }

    /// A write refused by fencing: the run is forgotten (nothing of it is written again) and
    /// its task told to stop.
    pub(super) fn fenced(&self, p: &Planned) {
        self.fenced.fetch_add(1, Ordering::Relaxed);
        let Some(t) = ({
            let mut st = self.lock();
            st.fenced.insert(p.run_id);
            st.runs.remove(&p.run_id)
        }) else {
            return;
        };
        tracing::warn!(run_id = %p.run_id, epoch = ?t.fence.as_ref().map(|f| f.epoch), "write refused: the run's lease was taken over by another instance (fenced); stopping the run here");
        if let Some(f) = &t.fence {
            // Before the waiters hear: the run's task must stop rather than end the run here.
            f.lost.cancel();
        }
        t.give_up(|| PersistError::Fenced);
    }

    /// Records a committed write: advances the cursor; a closed run is forgotten and its
    /// waiter told.
    pub(super) fn written(&self, p: &Planned, outcome: Result<bool, PersistError>) {
        let mut st = self.lock();
        let run_id = p.run_id;
        let Some(t) = st.runs.get_mut(&run_id) else {
            return;
        };
        t.written = t.written.max(p.last_seq);
        t.failures = 0;
        if let Some(stored) = &p.checkpoint {
            t.checkpoint_stored(stored);
        }
        if p.closes {
            // Everything the log will ever hold is stored (`done` is appended after this).
            t.log.raise_ceiling(u64::MAX);
        } else if let Some(c) = p.raise {
            t.log.raise_ceiling(c);
        }
        // Persisted: the log may drop what every reader in memory has read too.
        t.log.release(t.written);
        if p.closes {
            if let Some(t) = st.runs.remove(&run_id) {
                if let Some((_, Some(tx))) = t.closing {
                    let _ = tx.send(outcome);
                }
            }
        }
    }

    /// A run's end held back (commands pending): everything before `done` is stored; its
    /// waiter is told and the run stays registered for its next `finish`.
    fn held(&self, p: &Planned) {
        let mut st = self.lock();
        let Some(t) = st.runs.get_mut(&p.run_id) else {
            return;
        };
        // `done` is the planned write's last id.
        t.written = t.written.max(p.last_seq.saturating_sub(1));
        t.failures = 0;
        if let Some(c) = p.raise {
            t.log.raise_ceiling(c);
        }
        t.log.release(t.written);
        match t.closing.take() {
            Some((_, Some(tx))) => {
                let _ = tx.send(Err(PersistError::CommandsPending));
            }
            // Nobody waits to do them (answered already, see `broken.rs`): the end is written
            // as it is at the next try, so the run does not stay `running`.
            Some((Some(mut c), None)) => {
                c.state.close_commands = false;
                t.closing = Some((Some(c), None));
            }
            other => t.closing = other,
        }
    }

    pub(super) fn failed(&self, p: &Planned, e: StoreError) {
        let run_id = p.run_id;
        let mut st = self.lock();
        let stopping = st.stopping;
        let Some(t) = st.runs.get_mut(&run_id) else {
            return;
        };
        t.failures += 1;
        tracing::error!(%run_id, error = %e, failures = t.failures, "could not persist events");
        let storage = matches!(e, StoreError::Unavailable(_));
        if storage && !stopping {
            if t.failures >= MAX_FAILURES {
                t.give_up_waiting(&e);
            }
            return;
        }
        if t.failures >= MAX_FAILURES || (storage && stopping) {
            if let Some(t) = st.runs.remove(&run_id) {
                tracing::error!(%run_id, unwritten_after = t.written, "giving up persisting this run's events");
                t.give_up(|| PersistError::Failed(e.to_string()));
            }
        }
    }
}
