//! Resuming a run taken over (docs/deployment.md): its checkpoint read back with its images,
//! a new block of event ids reserved under the new lease epoch, the interrupts it had not
//! taken queued again, and its task spawned going on from the checkpoint under the same run
//! id, in the same trace. `recover` decides which runs are resumed and which fail.

use std::sync::Arc;

use crate::agent::checkpoint::{Checkpoint, Resume};
use crate::agent::InterruptQueue;
use crate::config::IMPLICIT_AGENT;
use crate::domain::{EventName, MessageKind};
use crate::runs::core::continuation::resumed_input;
use crate::runs::core::engines::RunEngine;
use crate::runs::core::images::load_images;
use crate::runs::core::log::EventLog;
use crate::runs::core::manager::{RunError, RunLabels, RunManager};
use crate::runs::core::progress::Progress;
use crate::store::{RunBatch, RunRow, StoredEvent, Written, EVENT_ID_BLOCK};
use crate::telemetry::spans::AgentAttrs;
use crate::telemetry::RunTrace;

impl RunManager {
    /// Resumes `run` from its stored checkpoint under lease `epoch`; `false` when it has none.
    pub(super) async fn resume_one(
        self: &Arc<Self>,
        run: &RunRow,
        epoch: i64,
    ) -> Result<bool, RunError> {
        let Some(cp) = self.checkpoint_of(run).await? else {
            return Ok(false);
        };
        let conv = self.owned(&run.owner, run.conversation_id).await?;
        let ledger = self.ledger_for(&run.owner, run.id, &conv);
        let (model, agent) = self
            .agent_for(
                &conv,
                Some(&run.model),
                Some(cp.mode),
                Some(cp.max_iterations),
                ledger.clone(),
            )
            .await?;
        let events = self.store.list_events(run.id, 0).await?;
        let (log, reset_answer) = self.reserve_ids(run, epoch, &events).await?;
        let queue = self.pending_interrupts(run, &cp).await?;
        self.active.insert(conv.id, run.id);
        let mut live = self.live_run_of(&run.owner, conv.id, run.id, epoch, log, ledger);
        // Its counters so far come from its stored events, as for a run that is failed.
        if let Some(l) = Arc::get_mut(&mut live) {
            l.progress = Arc::new(Progress::of_stored(&events));
        }
        let input = resumed_input(run.id, conv.id, cp.query.clone(), model);
        tracing::info!(run_id = %run.id, iteration = cp.iterations, in_flight = cp.in_flight.len(), "resuming the run from its checkpoint");
        // A continuation that died before its first event was stored begins as it would have.
        let continues = match events.is_empty() {
            true => cp.continues.clone(),
            false => None,
        };
        let resume = Resume {
            checkpoint: cp,
            reset_answer,
            continues,
        };
        let agent_name = conv.agent.as_deref().unwrap_or(IMPLICIT_AGENT);
        let labels = RunLabels {
            agent: agent_name.to_string(),
            trace: self.resumed_trace(run, agent_name).await,
        };
        let engine = RunEngine::React(agent);
        self.spawn_run(live, engine, input, queue, Some(resume), labels);
        // The run is live now: a failed read must not fail it (the owner's tick retries).
        if let Err(e) = self.apply_pending_commands(run.id).await {
            tracing::warn!(run_id = %run.id, error = %e, "cannot read the resumed run's pending commands");
        }
        Ok(true)
    }

    /// The run's stored checkpoint, its images read back (a checkpoint names stored images by
    /// artifact: their bytes are read once here); `None` when it has none.
    async fn checkpoint_of(&self, run: &RunRow) -> Result<Option<Checkpoint>, RunError> {
        let Some(raw) = self.store.run_checkpoint(run.id).await? else {
            return Ok(None);
        };
        let mut cp: Checkpoint = serde_json::from_str(&raw)
            .map_err(|e| RunError::Internal(format!("unreadable checkpoint: {e}")))?;
        let allowance = self.settings.max_run_image_bytes;
        load_images(&self.store, &run.owner, &mut cp.messages, allowance).await?;
        Ok(Some(cp))
    }

    /// The resumed run's log: its ids go on above every id the previous process could have
    /// sent, a new block reserved first under `epoch`. `true` with it when the answer so far
    /// must be reset (deltas may have been sent, stored or not).
    async fn reserve_ids(
        &self,
        run: &RunRow,
        epoch: i64,
        events: &[StoredEvent],
    ) -> Result<(EventLog, bool), RunError> {
        let stored = events.last().map(|e| e.seq).unwrap_or(0);
        let base = stored.max(self.store.event_ceiling(run.id).await?);
        // Unstored events may have been an answer's deltas, as the stored ones may be.
        let reset_answer = base > stored
            || events
                .iter()
                .any(|e| EventName::from_stored(&e.name) == EventName::Answer);
        let ceiling = base.saturating_add(EVENT_ID_BLOCK);
        let raised = self
            .store
            .write_batches(&[RunBatch {
                run_id: run.id,
                ceiling: Some(ceiling),
                epoch: Some(epoch),
                ..RunBatch::default()
            }])
            .await?;
        if raised.first() == Some(&Written::Fenced) {
            return Err(RunError::Internal(
                "another instance took the run over meanwhile".into(),
            ));
        }
        Ok((EventLog::resumed(base as u64, ceiling as u64), reset_answer))
    }

    /// The resumed run's queue: interrupts answered 202 that the loop had not taken yet are
    /// queued again.
    async fn pending_interrupts(
        &self,
        run: &RunRow,
        cp: &Checkpoint,
    ) -> Result<Arc<InterruptQueue>, RunError> {
        let queue = Arc::new(InterruptQueue::new());
        for m in self.store.list_messages(run.conversation_id).await? {
            let pending = m.kind == MessageKind::Interrupt
                && m.run_id == Some(run.id)
                && !cp.processed.iter().any(|i| i.id == m.id);
            if pending {
                let _ = queue.push_with_id(m.id, m.content);
            }
        }
        Ok(queue)
    }

    /// The same trace as before the restart (or takeover), when tracing was on then.
    async fn resumed_trace(&self, run: &RunRow, agent: &str) -> RunTrace {
        let traceparent = match crate::telemetry::enabled() {
            true => self.store.run_traceparent(run.id).await.unwrap_or_default(),
            false => None,
        };
        RunTrace::resume(
            traceparent.as_deref(),
            &AgentAttrs {
                agent,
                run_id: &run.id.to_string(),
                conversation_id: &run.conversation_id.to_string(),
                tenant: &run.owner,
                model: &run.model,
            },
        )
    }
}
