//! Driving a run: the run's task runs the agent with a sink that appends each event to the
//! run's [`EventLog`](super::log::EventLog) from the emitting task, catches a panic into the
//! same fallback tail a failed run ends with, and finishes the run: `done` and the final state,
//! both from the run's one [`RunOutcome`], are written in one transaction before `done` becomes
//! visible.

use std::sync::{Arc, Mutex};

use futures::FutureExt;
use tokio::sync::oneshot;
use uuid::Uuid;

use super::engines::RunEngine;
use super::log::EventLog;
use super::manager::{LiveRun, RunLabels, RunManager};
use super::persist::{EventWriter, Fence, Heat, Registered};
use crate::agent::artifacts::ArtifactSink;
use crate::agent::checkpoint::{
    CheckpointJson, CheckpointSink, Checkpoints, NotRecorded, Recorded, Resume,
};
use crate::agent::{AgentEvent, EventSink, InterruptQueue, RunHandles, RunInput, RunOutcome};
use crate::domain::{MessageKind, MessageRole};
use crate::llm::Continuity;
use crate::store::{FinalState, NewMessage, RunFinish};

mod ending;
mod finish;
use ending::{end_panicked, end_unstored, finish_trace, log_finished, out_of_budget};

/// The run's `done` as the sink took it: the outcome, its serialised data and its event id.
struct Done {
    outcome: RunOutcome,
    data: String,
    seq: u64,
}

/// What the run's end reports besides `done`: its labels and model for the last log line and
/// the trace, the answer's continuity for the stored answer.
struct Ended {
    labels: RunLabels,
    model: String,
    answer_continuity: Option<Continuity>,
}

/// The stored final state of a run that ended with `outcome`. With `answer_in` (conversation,
/// run) the answer is kept as the conversation's next message; a recovered run keeps none, so
/// the apology does not become history.
pub(in crate::runs) fn final_state(
    outcome: &RunOutcome,
    answer_in: Option<(Uuid, Uuid)>,
) -> FinalState {
    let answer =
        answer_in
            .filter(|_| !outcome.answer.is_empty())
            .map(|(conversation_id, run_id)| NewMessage {
                id: None,
                conversation_id,
                role: MessageRole::Assistant,
                kind: MessageKind::Answer,
                content: outcome.answer.clone(),
                run_id: Some(run_id),
                images: Vec::new(),
            });
    FinalState {
        budget: None,
        close_commands: false,
        finish: RunFinish {
            status: outcome.status,
            iterations: outcome.iterations,
            tool_calls: outcome.tool_calls,
            usage: outcome.usage,
            error: outcome.error.clone(),
        },
        answer,
    }
}

/// The run's checkpoint sink: each checkpoint is stored with the events appended before it.
struct RunCheckpoints {
    run_id: Uuid,
    log: Arc<EventLog>,
    writer: Arc<EventWriter>,
}

impl Checkpoints for RunCheckpoints {
    fn save(&self, checkpoint: CheckpointJson) {
        let after = self.log.len() as u64;
        self.writer.checkpoint(self.run_id, after, checkpoint);
    }

    fn save_durably(&self, checkpoint: CheckpointJson) -> Recorded {
        let (run_id, writer) = (self.run_id, self.writer.clone());
        let after = self.log.len() as u64;
        Box::pin(async move {
            writer
                .checkpoint_durably(run_id, after, checkpoint)
                .await
                .map_err(|e| NotRecorded(e.to_string()))
        })
    }
}

fn checkpoints(live: &LiveRun, writer: &Arc<EventWriter>) -> CheckpointSink {
    Arc::new(RunCheckpoints {
        run_id: live.id,
        log: live.log.clone(),
        writer: writer.clone(),
    })
}

impl RunManager {
    /// Runs the agent, persists, and cleans up. `done` is held back by the sink: it is
    /// persisted with the run's final state first, then appended and the log closed.
    pub(in crate::runs) async fn drive(
        self: Arc<Self>,
        live: Arc<LiveRun>,
        agent: RunEngine,
        input: RunInput,
        queue: Arc<InterruptQueue>,
        resume: Option<Resume>,
        labels: RunLabels,
    ) {
        let writer = self.writer();
        let model = input.model_name.clone().unwrap_or_default();
        let fence = Fence {
            epoch: live.epoch,
            lost: live.lost.clone(),
        };
        let Registered { broken, heat } =
            writer.register_fenced(live.id, live.log.clone(), Some(fence));
        let (sink, done_rx) = self.sink(&live, &writer, heat, labels.trace.trace_id());
        let handles = RunHandles {
            events: sink.clone(),
            interrupts: queue,
            cancel: live.cancel.clone(),
            artifacts: Arc::new(self.store.clone()) as Arc<dyn ArtifactSink>,
            checkpoints: Some(checkpoints(&live, &writer)),
            tool_slots: self.tool_pool.run_slots(),
        };
        // The outcome reaches the manager through `done`, as it reaches clients; the trace the
        // engine returns is not kept. A panic inside the engine must still end the stream
        // truthfully.
        let instance = self.settings.instance_id.clone();
        // A run whose progress cannot be stored is stopped (its engine dropped, like a run
        // handed over at shutdown) and ends failed, saying why.
        let stopped = broken.clone();
        let ran = std::panic::AssertUnwindSafe(async move {
            let engine = async move {
                match resume {
                    // Boxed: rare, and inline it would add its size to every run's task.
                    Some(r) => Box::pin(agent.resume(input, handles, r, &instance)).await,
                    None => agent.run(input, handles).await,
                }
            };
            // Checked first: once fired, the engine is not polled again (it may have just been
            // told that a durable checkpoint failed, and would go on without it).
            tokio::select! {
                biased;
                _ = stopped.fired() => None,
                continuity = engine => Some(continuity),
            }
        })
        .catch_unwind()
        .await;
        let mut answer_continuity = None;
        match ran {
            Ok(Some(continuity)) => answer_continuity = continuity,
            Ok(None) => end_unstored(&live, &sink, &broken),
            Err(panic) => end_panicked(&sink, panic.as_ref()),
        }
        drop(sink);
        let ended = Ended {
            labels,
            model,
            answer_continuity,
        };
        self.end(&writer, &live, done_rx, ended).await;
    }

    /// After the engine: `done` and its final state stored with the run's spend settled (see
    /// [`Self::finish`]), the run no longer live.
    async fn end(
        self: &Arc<Self>,
        writer: &EventWriter,
        live: &Arc<LiveRun>,
        done_rx: oneshot::Receiver<Done>,
        ended: Ended,
    ) {
        match done_rx.await {
            Ok(done) => {
                log_finished(live, &ended.labels.agent, &ended.model, &done.outcome);
                finish_trace(&ended.labels.trace, &done.outcome);
                self.finish(writer, live, done, ended.answer_continuity)
                    .await;
            }
            Err(_) => {
                // Cannot happen (a `done` is always sent above); still settle and flush what
                // there is (before closing: readers see only what is stored or reserved).
                live.ledger.finish().await;
                if let Err(e) = writer.finish(live.id, None).await {
                    tracing::error!(error = %e, "could not persist the run's last events");
                }
                live.log.close();
                self.release(live);
            }
        }
        self.live.remove(&live.id);
        live.done.cancel();
    }

    /// The run's event sink: every event but `done` goes into the log (and to the observer;
    /// the writer is told, with the run's `heat`); the first `done` seals the log and is handed
    /// to [`RunManager::drive`], nothing after it is kept.
    /// `trace_id` goes into `start` and `done`, with the trace's URL (`trace_url`) into `done`.
    fn sink(
        &self,
        live: &LiveRun,
        writer: &Arc<EventWriter>,
        heat: Heat,
        trace_id: Option<String>,
    ) -> (EventSink, oneshot::Receiver<Done>) {
        let trace_url = trace_id
            .as_deref()
            .zip(self.settings.trace_url.as_deref())
            .map(|(id, template)| template.replace("{trace_id}", id));
        let (done_tx, done_rx) = oneshot::channel::<Done>();
        let done_tx = Mutex::new(Some(done_tx));
        let log = live.log.clone();
        let writer = writer.clone();
        let observer = self.observer.clone();
        let progress = live.progress.clone();
        let ledger = live.ledger.clone();
        // The observer sees exactly what the log takes: not a second `done`, nothing after it.
        let observe = move |ev: &AgentEvent| {
            progress.observe(ev);
            if let Some(observe) = &observer {
                observe(ev);
            }
        };
        let sink = EventSink::new(move |mut ev: AgentEvent| {
            match &mut ev {
                AgentEvent::Start(s) => s.trace_id.clone_from(&trace_id),
                AgentEvent::Done(d) => {
                    out_of_budget(d, ledger.refused());
                    d.trace_id.clone_from(&trace_id);
                    d.trace_url.clone_from(&trace_url);
                }
                _ => {}
            }
            let data = ev.data_json();
            if !matches!(ev, AgentEvent::Done(_)) {
                if log.append(ev.name(), data) {
                    writer.appended(&heat);
                    observe(&ev);
                }
                return;
            }
            let Some(seq) = log.seal() else { return };
            observe(&ev);
            let tx = done_tx.lock().unwrap_or_else(|p| p.into_inner()).take();
            if let (Some(tx), AgentEvent::Done(outcome)) = (tx, ev) {
                let _ = tx.send(Done { outcome, data, seq });
            }
        });
        (sink, done_rx)
    }

    /// The run's task was dropped at shutdown (see `RunManager::shutdown`): its row stays
    /// `running` with its last checkpoint, which the writer still stores, for the next start.
    pub(in crate::runs) fn handed_over(&self, live: &LiveRun) {
        tracing::info!(run_id = %live.id, "run handed over to the next start");
        self.handed_over
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((live.id, live.epoch));
        self.live.remove(&live.id);
        self.release(live);
        live.done.cancel();
    }

    /// Another instance took the run over (its lease was not renewed in time): its task was
    /// dropped without writing anything more; its local streams end without `done` and their
    /// clients resume by `Last-Event-ID` on any instance.
    pub(in crate::runs) fn lost(&self, live: &LiveRun) {
        tracing::warn!(run_id = %live.id, epoch = live.epoch, "run stopped here: its lease is held by another instance now");
        if let Some(w) = self.writer.get() {
            w.forget(live.id);
        }
        self.live
            .remove_if(&live.id, |_, l| std::ptr::eq(l.as_ref(), live));
        self.release(live);
        live.log.close();
        live.done.cancel();
    }

    /// Frees the conversation for its next run.
    fn release(&self, live: &LiveRun) {
        self.queues.remove(&live.conversation_id);
        self.active.remove(&live.conversation_id);
    }
}
