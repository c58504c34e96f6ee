//! Checkpoints of the tool loop and resuming from one: [`LoopRun::save`] hands the
//! loop's state to the run's checkpoint sink, [`LoopRun::execute`] makes the checkpoint that
//! lists a batch of calls durable before a call that must not run twice leaves the process,
//! [`LoopRun::resume`] rebuilds a loop from a checkpoint and [`LoopRun::answer_in_flight`]
//! answers the calls it left running.

use std::sync::Arc;

use super::{LoopRun, LoopSetup};
use crate::agent::checkpoint::{
    Checkpoint, CheckpointFixed, CheckpointHead, CheckpointJson, CheckpointSink, InFlightCall,
    InFlightRef, JsonList, NotRecorded, STEPS_KEEP_FROM,
};
use crate::agent::context::History;
use crate::agent::events::SafeguardKind;
use crate::agent::executor::{Batch, PendingCall};
use crate::agent::prompts;
use crate::agent::run::{RunHandles, RunInput};
use crate::llm::Message;

impl<'a> LoopRun<'a> {
    /// The loop where `cp` left it (the rest is built as for a new run).
    pub fn resume(
        setup: LoopSetup<'a>,
        input: &RunInput,
        handles: &'a RunHandles,
        cp: Checkpoint,
    ) -> (Self, Vec<InFlightCall>) {
        // The caller's tools are the paused run's, as its checkpoint lists them.
        let input = RunInput {
            client_tools: cp.client_tools.clone(),
            ..input.clone()
        };
        let mut lr = Self::new(setup, &input, handles);
        lr.awaiting = cp.awaiting;
        lr.query = cp.query;
        lr.iterations = cp.iterations;
        lr.tool_calls = cp.tool_calls;
        lr.usage = cp.usage;
        lr.messages = History::new(cp.messages);
        lr.steps = cp.steps;
        lr.steps_json = JsonList::keeping_from(STEPS_KEEP_FROM);
        lr.processed = cp.processed;
        lr.checklist_done = cp.checklist_done;
        lr.last_parse_failed = cp.last_parse_failed;
        let calls = lr.steps.iter().filter(|s| !s.blocked);
        lr.reflection.restore(
            cp.executions,
            calls.map(|s| (s.tool.as_str(), &s.arguments)),
        );
        // The last call that was not blocked stands for the last execution (which calls ran is
        // not kept).
        let calls = lr.steps.iter().filter(|s| !s.blocked);
        lr.last_run
            .record(calls.map(|s| (s.tool.as_str(), &s.arguments, s.observation.as_str())));
        lr.restore_cycles(cp.continues.is_some());
        (lr, cp.in_flight)
    }

    /// Cycle detection as the steps left it. Each call of a caller tool ends its run, so without
    /// this a model asking the caller for the same call over and over was never seen to repeat
    /// itself. A continuation (`fresh`: its checkpoint is the paused run's with the caller's
    /// outputs appended) warns about a cycle those outputs complete, as a loop does after tools.
    fn restore_cycles(&mut self, fresh: bool) {
        // The outputs: the last iteration's trailing steps of caller tools.
        let last = self.steps.last().map(|s| s.iteration);
        let outputs = match fresh {
            true => self
                .steps
                .iter()
                .rev()
                .take_while(|s| Some(s.iteration) == last && self.is_client(&s.tool))
                .count(),
            false => 0,
        };
        let first_output = self.steps.len() - outputs;
        let mut warnings = Vec::new();
        for (i, s) in self.steps.iter().enumerate().filter(|(_, s)| !s.blocked) {
            let cycle = self.cycles.record(&s.tool, &s.arguments, &s.observation);
            if let (true, Some(cycle)) = (i >= first_output, cycle) {
                warnings.push((s.tool.clone(), cycle));
            }
        }
        for (tool, cycle) in warnings {
            self.messages
                .push(Message::user(prompts::cycle_warning(&tool, cycle)));
            self.safeguard(SafeguardKind::CycleWarning, Some(tool));
        }
    }

    /// Hands the loop's state to the checkpoint sink as JSON; `in_flight`: the calls about to
    /// run. The history and the steps are serialised incrementally ([`JsonList`]).
    pub(super) fn save(&mut self, in_flight: &[PendingCall]) {
        if let Some((sink, json)) = self.checkpoint(in_flight) {
            sink.save(json);
        }
    }

    /// As [`Self::save`], and waits until the checkpoint is durable: the calls it lists in
    /// flight may leave the process only then (a resumed run answers them as interrupted
    /// instead of calling them again). Fails when it cannot be stored, e.g. when another
    /// instance took the run over.
    pub(super) async fn save_durably(
        &mut self,
        in_flight: &[PendingCall],
    ) -> Result<(), NotRecorded> {
        if self.handles.checkpoints.is_none() {
            // No checkpoint store: nothing resumes this run in another process.
            return Ok(());
        }
        match self.checkpoint(in_flight) {
            Some((sink, json)) => sink.save_durably(json).await,
            None => Err(NotRecorded(
                "the run's checkpoint could not be serialised".into(),
            )),
        }
    }

    /// The run's checkpoint sink and the loop's state as its JSON (`None` without a sink or
    /// when the state cannot be serialised, which is logged).
    fn checkpoint(
        &mut self,
        in_flight: &[PendingCall],
    ) -> Option<(CheckpointSink, CheckpointJson)> {
        let sink = self.handles.checkpoints.clone()?;
        let fixed = match self.fixed_json() {
            Ok(fixed) => fixed,
            Err(e) => {
                tracing::warn!(error = %e, "could not serialise the run's checkpoint");
                return None;
            }
        };
        let head = CheckpointHead {
            iterations: self.iterations,
            tool_calls: self.tool_calls,
            usage: self.usage,
            processed: &self.processed,
            in_flight: in_flight
                .iter()
                .map(|c| InFlightRef {
                    call_id: &c.call_id,
                    tool: &c.tool,
                    arguments: &c.arguments,
                })
                .collect(),
            checklist_done: self.checklist_done,
            last_parse_failed: self.last_parse_failed,
            executions: self.reflection.executions(),
            awaiting: &self.awaiting,
        };
        let (messages, steps, steps_json) = (&mut self.messages, &self.steps, &mut self.steps_json);
        match head.to_json(
            &fixed,
            |out| messages.write_json(out),
            |out| steps_json.write(steps, out),
        ) {
            Ok(json) => Some((sink, json)),
            Err(e) => {
                tracing::warn!(error = %e, "could not serialise the run's checkpoint");
                None
            }
        }
    }

    /// The checkpoints' fields that stay the same for the run, serialised at the first.
    fn fixed_json(&mut self) -> serde_json::Result<Arc<String>> {
        if let Some(json) = &self.fixed_json {
            return Ok(json.clone());
        }
        let fixed = CheckpointFixed {
            mode: self.mode,
            query: &self.query,
            tools: &self.tool_names,
            max_iterations: self.config.max_iterations,
            client_tools: &self.client_tools,
        }
        .to_json()?;
        Ok(self.fixed_json.insert(fixed).clone())
    }

    /// Answers the calls a stopped instance left running: idempotent tools run again, the
    /// others get the interrupted result; then the loop goes on as after any tool batch.
    pub async fn answer_in_flight(&mut self, calls: Vec<InFlightCall>) {
        if calls.is_empty() {
            return;
        }
        let cancel = self.handles.cancel.clone();
        let mut executed = Vec::with_capacity(calls.len());
        for c in calls {
            let call = PendingCall {
                call_id: c.call_id,
                tool: c.tool,
                arguments: c.arguments,
            };
            let again = self
                .executor
                .tools
                .get(&call.tool)
                .is_some_and(|t| t.idempotent());
            if again {
                let (mut done, _) = self
                    .executor
                    .execute_batch(self.iterations, vec![call], &cancel)
                    .await;
                executed.append(&mut done);
            } else {
                executed.push(self.executor.interrupted(self.iterations, &call));
            }
        }
        for e in &executed {
            let r = &e.record;
            let message = self.result_message(&r.call_id, &r.observation, r.error);
            self.messages.push(message);
        }
        self.after_tools(executed);
        self.drain_interrupts();
    }

    /// Runs a reply's calls after checkpointing them as in flight, under the repeat rule
    /// ([`LoopRun::run_reply`]). When one of them must not run twice, the checkpoint is made
    /// durable first (idempotent calls do not wait for it): if it cannot be, no call of the
    /// batch is made.
    pub(super) async fn execute(&mut self, calls: Vec<PendingCall>) -> Batch {
        let calls = self.executor.resolve_names(calls);
        let cancel = self.handles.cancel.clone();
        if self.at_most_once(&calls) {
            let recorded = tokio::select! {
                // Cancelled meanwhile: the batch below answers every call as cancelled.
                _ = cancel.cancelled() => Ok(()),
                r = self.save_durably(&calls) => r,
            };
            if let Err(e) = recorded {
                tracing::warn!(error = %e, iteration = self.iterations, "tool calls not made: their start could not be recorded");
                let observation = prompts::not_recorded(&e.to_string());
                return Batch::answered(self.executor.not_run(
                    self.iterations,
                    calls,
                    &observation,
                ));
            }
        } else {
            self.save(&calls);
        }
        self.run_reply(calls, &cancel).await
    }

    /// Some call of the batch would run a tool that is not idempotent (a call that cannot run:
    /// an unknown tool or unreadable arguments, needs no record).
    fn at_most_once(&self, calls: &[PendingCall]) -> bool {
        calls.iter().any(|c| {
            c.arguments.is_ok()
                && self
                    .executor
                    .tools
                    .get(&c.tool)
                    .is_some_and(|t| !t.idempotent())
        })
    }
}
