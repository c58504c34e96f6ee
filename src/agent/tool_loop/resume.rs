//! Checkpoints of the tool loop and resuming from one (docs/deployment.md): [`LoopRun::save`] hands the
//! loop's state to the run's checkpoint sink, [`LoopRun::resume`] rebuilds a loop from it and
//! [`LoopRun::answer_in_flight`] answers the calls it left running.

use std::sync::Arc;

use super::{LoopRun, LoopSetup};
use crate::agent::checkpoint::{
    Checkpoint, CheckpointFixed, CheckpointHead, InFlightCall, InFlightRef, JsonList,
    STEPS_KEEP_FROM,
};
use crate::agent::context::History;
use crate::agent::events::Mode;
use crate::agent::executor::PendingCall;
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
        let mut lr = Self::new(setup, input, handles);
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
        lr.reflection.add(cp.executions);
        (lr, cp.in_flight)
    }

    /// Hands the loop's state to the checkpoint sink as JSON; `in_flight`: the calls about to
    /// run. The history and the steps are serialised incrementally ([`JsonList`]).
    pub(super) fn save(&mut self, in_flight: &[PendingCall]) {
        let Some(sink) = &self.handles.checkpoints else {
            return;
        };
        let fixed = match self.fixed_json() {
            Ok(fixed) => fixed,
            Err(e) => {
                tracing::warn!(error = %e, "could not serialise the run's checkpoint");
                return;
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
        };
        let (messages, steps, steps_json) = (&mut self.messages, &self.steps, &mut self.steps_json);
        match head.to_json(
            &fixed,
            |out| messages.write_json(out),
            |out| steps_json.write(steps, out),
        ) {
            Ok(json) => sink(json),
            Err(e) => tracing::warn!(error = %e, "could not serialise the run's checkpoint"),
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
            let message = match self.mode {
                Mode::Native => {
                    Message::tool(e.record.call_id.clone(), e.record.observation.clone())
                }
                Mode::Json => Message::user(prompts::observation(&e.record.observation)),
            };
            self.messages.push(message);
        }
        self.after_tools(executed);
        self.drain_interrupts();
    }
}
