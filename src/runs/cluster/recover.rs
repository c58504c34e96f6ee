//! Takeover and restart recovery (docs/deployment.md): runs taken from a dead (or paused, or cut off)
//! instance — at start-up, or by the lease sweeper on PostgreSQL — resume from their last
//! checkpoint (`REAGENT_RESUME_ON_RESTART`) under the new lease epoch, their stream going on
//! under the same run id after `step {type:"resumed"}`; runs without a usable checkpoint (or
//! with resuming off) are failed,
//! their logs closed with the same fallback tail as any failed run, so replays end truthfully. The tail's ids
//! start above the run's committed event-id ceiling, never at an id a client may have seen.

use std::sync::Arc;

use crate::agent::events::{AnswerEvent, DagSummary, StartEvent, StepEvent};
use crate::agent::synthesis::{fallback_tail, AnswerSoFar};
use crate::agent::{AgentEvent, RunOutcome};
use crate::domain::{Engine, EventName};
use crate::runs::core::drive::final_state;
use crate::runs::core::manager::{RunError, RunManager, RESTART_ERROR};
use crate::runs::core::progress::Progress;
use crate::store::{RunBatch, RunRow, StoredEvent, TakenRun};

/// Most runs one sweep takes: a dead instance's runs spread over the sweeping instances.
const SWEEP_BATCH: i64 = 32;

/// What start-up recovery did with the runs a previous process left `running`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Recovered {
    pub resumed: usize,
    pub failed: usize,
}

impl Recovered {
    pub fn total(&self) -> usize {
        self.resumed + self.failed
    }
}

impl RunManager {
    /// Start-up recovery. SQLite serves one process, so every running run (but this
    /// process's own) is a dead process's: all are taken at once. PostgreSQL: the runs still
    /// leased to this instance's name (its previous process's: an instance id names one live
    /// process) and those whose lease lapsed (or never had one); the others belong to live
    /// instances, or to a dead one whose lease the sweeper takes once it lapses. Each taken run
    /// is resumed from its checkpoint (unless `resume_on_restart` is off, or it has none, or it
    /// cannot be used), else failed.
    pub async fn recover(self: &Arc<Self>) -> Result<Recovered, RunError> {
        if self.store.backend() == "postgres" {
            let mut recovered = Recovered::default();
            let (me, ttl) = (self.settings.instance_id.clone(), self.settings.lease.ttl);
            loop {
                let own = self.store.take_own(&me, ttl, SWEEP_BATCH).await?;
                let r = self.take_over(&own).await?;
                recovered.resumed += r.resumed;
                recovered.failed += r.failed;
                if own.len() < SWEEP_BATCH as usize {
                    break;
                }
            }
            loop {
                let r = self.sweep().await?;
                recovered.resumed += r.resumed;
                recovered.failed += r.failed;
                if r.total() < SWEEP_BATCH as usize {
                    return Ok(recovered);
                }
            }
        }
        let (me, ttl) = (self.settings.instance_id.clone(), self.settings.lease.ttl);
        let mut taken = Vec::new();
        for run in self.store.running_runs().await? {
            if self.live.contains_key(&run.id) {
                continue;
            }
            if let Some(t) = self.store.take_run(run.id, &me, ttl).await? {
                taken.push(t);
            }
        }
        self.take_over(&taken).await
    }

    /// One sweep (PostgreSQL): takes up to [`SWEEP_BATCH`] runs whose lease lapsed, with a new
    /// epoch, and resumes (or fails) them.
    pub(in crate::runs) async fn sweep(self: &Arc<Self>) -> Result<Recovered, RunError> {
        let taken = self
            .store
            .take_lapsed(
                &self.settings.instance_id,
                self.settings.lease.ttl,
                SWEEP_BATCH,
            )
            .await?;
        self.take_over(&taken).await
    }

    /// Runs just taken: resumed, else failed, each under its new epoch.
    async fn take_over(self: &Arc<Self>, taken: &[TakenRun]) -> Result<Recovered, RunError> {
        let mut recovered = Recovered::default();
        for t in taken {
            self.lease_stats
                .takeovers
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            // Our own run whose lease lapsed (renewals failed for a whole TTL): its old task
            // stops first, so one task at a time executes the run here.
            if let Some(old) = self.live.get(&t.id).map(|l| l.clone()) {
                old.lost.cancel();
                old.finished().await;
            }
            let Some(run) = self.store.get_run_any(t.id).await? else {
                continue;
            };
            tracing::info!(run_id = %run.id, epoch = t.epoch, "took the run over");
            // Its calls in flight died with the process that ran it: their reservations go back.
            match self.store.release_budget_holds(run.id).await {
                Ok(0) => {}
                Ok(n) => {
                    tracing::info!(run_id = %run.id, holds = n, "released the budget reservations of its calls in flight")
                }
                Err(e) => {
                    tracing::warn!(run_id = %run.id, error = %e, "cannot release the run's budget reservations")
                }
            }
            if self.settings.resume_on_restart {
                match self.resume_one(&run, t.epoch).await {
                    Ok(true) => {
                        recovered.resumed += 1;
                        continue;
                    }
                    Ok(false) => {}
                    Err(e) => {
                        tracing::warn!(run_id = %run.id, error = %e, "cannot resume the run; it fails")
                    }
                }
            }
            self.recover_one(&run, t.epoch).await?;
            recovered.failed += 1;
        }
        Ok(recovered)
    }

    /// Fails `run` under lease `epoch` (nothing is written if another instance took it since).
    async fn recover_one(&self, run: &RunRow, epoch: i64) -> Result<(), RunError> {
        let events = self.store.list_events(run.id, 0).await?;
        // Above every id clients may have seen (some never stored): an id never names two
        // events, at the price of a gap in the ids where the crash was.
        let ceiling = self.store.event_ceiling(run.id).await?;
        let stored_up_to = events.last().map(|e| e.seq).unwrap_or(0);
        // Clients may have seen events that were never stored, an answer's deltas among them.
        let unstored_seen = ceiling > stored_up_to;
        let outcome = failed_outcome(run, &events);
        let state = final_state(&outcome, None);
        let tail = recovery_tail(run, &events, outcome, unstored_seen);
        // Tail and terminal state in one transaction: a crash during recovery leaves the run
        // `running` with its log untouched, and the next start recovers it again.
        self.store
            .write_runs(&[RunBatch {
                run_id: run.id,
                events: numbered(stored_up_to.max(ceiling), &tail),
                ceiling: None,
                checkpoint: None,
                finish: Some(state),
                epoch: Some(epoch),
            }])
            .await?;
        Ok(())
    }
}

/// How a run that cannot go on ends: failed by the restart, with the counters its stored
/// events show (the row's are written only at the end).
fn failed_outcome(run: &RunRow, events: &[StoredEvent]) -> RunOutcome {
    let progress = Progress::of_stored(events);
    RunOutcome {
        iterations: run.iterations.max(progress.iterations()),
        tool_calls: run.tool_calls.max(progress.tool_calls()),
        usage: run.usage,
        // A DAG run's `done` says so, with the rounds it planned.
        dag: dag_summary(events),
        ..RunOutcome::failed(
            run.mode,
            format!("Sorry, this run was {RESTART_ERROR} before it finished."),
            RESTART_ERROR,
        )
    }
}

/// The events that end a failed run's log after `events`: `start` if none was stored, then the
/// fallback tail, with an answer `reset` when a client may have seen answer text never stored.
fn recovery_tail(
    run: &RunRow,
    events: &[StoredEvent],
    outcome: RunOutcome,
    unstored_seen: bool,
) -> Vec<AgentEvent> {
    let answer_started = events
        .iter()
        .any(|e| EventName::from_stored(&e.name) == EventName::Answer);
    let so_far = if answer_started {
        AnswerSoFar::Partial
    } else {
        AnswerSoFar::NotStarted
    };
    let mut tail = Vec::new();
    if events.is_empty() {
        // Killed before its first write: the replay must still begin with `start`.
        tail.push(AgentEvent::Start(StartEvent {
            run_id: run.id.to_string(),
            conversation_id: run.conversation_id.to_string(),
            model: run.model.clone(),
            mode: run.mode,
            engine: Engine::React,
            continues: None,
            trace_id: None,
        }));
    }
    let opens_answer = so_far == AnswerSoFar::NotStarted;
    for (i, ev) in fallback_tail(outcome, so_far).into_iter().enumerate() {
        tail.push(ev);
        if i == 0 && opens_answer && unstored_seen {
            // After the fallback's `start`: discards whatever answer a client may have seen.
            tail.push(AgentEvent::Answer(AnswerEvent::Reset));
        }
    }
    tail
}

/// `tail` as stored events with the ids after `after`.
fn numbered(after: i64, tail: &[AgentEvent]) -> Vec<StoredEvent> {
    (after + 1..)
        .zip(tail)
        .map(|(seq, e)| StoredEvent {
            seq,
            name: e.name().to_string(),
            data: e.data_json(),
        })
        .collect()
}

/// For a DAG run (its `start` says `engine: dag`): the rounds its `plan` events show, not
/// achieved.
fn dag_summary(events: &[StoredEvent]) -> Option<DagSummary> {
    let parse = |e: &StoredEvent| AgentEvent::from_parts(&e.name, &e.data).ok();
    let start = events.first().and_then(parse);
    if !matches!(
        start,
        Some(AgentEvent::Start(StartEvent {
            engine: Engine::Dag,
            continues: None,
            ..
        }))
    ) {
        return None;
    }
    let rounds = events
        .iter()
        .filter(|e| matches!(parse(e), Some(AgentEvent::Step(StepEvent::Plan { .. }))))
        .count() as u32;
    Some(DagSummary {
        engine: Engine::Dag,
        rounds,
        achieved: false,
        confidence: 0.0,
    })
}
