//! Leases (docs/deployment.md): one task per process that, every `lease_renew`, heartbeats this
//! instance's `instances` row, renews the leases of the runs it executes, stops the runs whose
//! lease it no longer holds (taken over while this process was paused or cut off: their task is
//! dropped without writing, their local streams end, clients resume on any instance), and, on
//! PostgreSQL, sweeps for runs whose lease lapsed and resumes them (`recover`). On SIGTERM,
//! once the runs are handed over, their leases are released so another instance takes them at
//! its next sweep rather than after the TTL.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

use uuid::Uuid;

use crate::runs::core::manager::RunManager;

/// What `/metrics` shows about leases.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LeaseCounts {
    /// Runs this instance executes (each under its lease).
    pub owned: u64,
    pub takeovers: u64,
    pub fenced_writes: u64,
    pub renewal_failures: u64,
    /// Of the runs owned, those a client follows through another instance (written as their
    /// events come, `follow`).
    pub followed: u64,
    /// Writes made for followed runs between ticks.
    pub followed_writes: u64,
}

impl RunManager {
    /// The lease counters as `/metrics` shows them.
    pub fn lease_counts(&self) -> LeaseCounts {
        LeaseCounts {
            owned: self.live.len() as u64,
            takeovers: self.lease_stats.takeovers.load(Ordering::Relaxed),
            fenced_writes: self.writer.get().map_or(0, |w| w.fenced_writes()),
            renewal_failures: self.lease_stats.renewal_failures.load(Ordering::Relaxed),
            followed: self.writer.get().map_or(0, |w| w.followed_runs() as u64),
            followed_writes: self.writer.get().map_or(0, |w| w.hot_writes()),
        }
    }

    /// Starts the lease task (once): a first heartbeat now, then every `lease.renew`.
    pub fn start_leases(self: &Arc<Self>) {
        let stop = self.lease_stop.clone();
        let me: Weak<Self> = Arc::downgrade(self);
        let every = self.settings.lease.renew;
        let task = tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    () = stop.cancelled() => return,
                    _ = tick.tick() => {}
                }
                let Some(me) = me.upgrade() else { return };
                me.lease_tick().await;
            }
        });
        let mut slot = self.lease_task.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(old) = slot.replace(task) {
            old.abort();
        }
    }

    /// One renewal: heartbeat, renew, stop what was lost, then sweep (PostgreSQL).
    async fn lease_tick(self: &Arc<Self>) {
        let me = self.settings.instance_id.as_str();
        if let Err(e) = self.store.heartbeat(me, self.started_at).await {
            tracing::warn!(error = %e, "could not record this instance's heartbeat");
        }
        let held: Vec<(Uuid, i64)> = self
            .live
            .iter()
            .filter(|l| !l.lost.is_cancelled())
            .map(|l| (l.id, l.epoch))
            .collect();
        match self
            .store
            .renew_leases(me, &held, self.settings.lease.ttl)
            .await
        {
            Ok(renewed) if renewed.len() < held.len() => self.find_lost(&held, &renewed).await,
            Ok(_) => {}
            Err(e) => {
                self.lease_stats
                    .renewal_failures
                    .fetch_add(1, Ordering::Relaxed);
                tracing::warn!(error = %e, runs = held.len(), "could not renew this instance's leases");
            }
        }
        if self.store.backend() == "postgres" && !self.shutdown.is_cancelled() {
            match self.sweep().await {
                Ok(r) if r.total() > 0 => {
                    tracing::info!(
                        resumed = r.resumed,
                        failed = r.failed,
                        "took over runs whose lease lapsed"
                    )
                }
                Ok(_) => {}
                Err(e) => tracing::warn!(error = %e, "the sweep for lapsed leases failed"),
            }
        }
    }

    /// Of the runs `held` but not `renewed`: those whose row now names another owner or epoch
    /// are lost (a finished or deleted run is not).
    async fn find_lost(&self, held: &[(Uuid, i64)], renewed: &[Uuid]) {
        let missing: Vec<Uuid> = held
            .iter()
            .map(|(id, _)| *id)
            .filter(|id| !renewed.contains(id))
            .collect();
        let states = match self.store.lease_states(&missing).await {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(error = %e, "could not read the leases that were not renewed");
                return;
            }
        };
        for (id, owner, epoch) in states {
            let mine = held.iter().any(|(h, ep)| *h == id && *ep == epoch)
                && owner.as_deref() == Some(self.settings.instance_id.as_str());
            if !mine {
                if let Some(live) = self.live.get(&id).map(|l| l.clone()) {
                    tracing::warn!(run_id = %id, new_owner = ?owner, epoch, "this instance lost the run's lease (another instance took it over): stopping the run here without writing (fenced)");
                    live.lost.cancel();
                }
            }
        }
    }

    /// The leases of runs stopped by the shutdown hand-over lapse now, and this instance
    /// leaves `instances`: called after the event writer's last write.
    pub(in crate::runs) async fn release_leases(&self) {
        self.lease_stop.cancel();
        let task = self
            .lease_task
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(task) = task {
            let _ = task.await;
        }
        let handed: Vec<(Uuid, i64)> =
            std::mem::take(&mut *self.handed_over.lock().unwrap_or_else(|p| p.into_inner()));
        let me = self.settings.instance_id.as_str();
        if !handed.is_empty() {
            match self.store.release_leases(me, &handed).await {
                Ok(()) => tracing::info!(
                    runs = handed.len(),
                    "released the leases of the runs handed over"
                ),
                Err(e) => {
                    tracing::warn!(error = %e, "could not release the leases of the runs handed over: they lapse after the TTL")
                }
            }
        }
        if let Err(e) = self.store.remove_instance(me).await {
            tracing::warn!(error = %e, "could not remove this instance's row");
        }
    }
}
