//! Caller tools in the loop: a response's calls split into the run's own and the caller's, and
//! the pause that ends the run `requires_action` once the run's own calls have their results.

use super::*;
use crate::agent::caller_tools::is_caller_tool;

impl LoopRun<'_> {
    /// Whether `name` is one of the caller's tools.
    pub(super) fn is_client(&self, name: &str) -> bool {
        is_caller_tool(&self.client_tools, name)
    }

    /// The calls of caller tools in `calls` (in order), as the caller receives them.
    pub(super) fn caller_calls(&self, calls: &[crate::llm::ToolCall]) -> Vec<CallerCall> {
        calls
            .iter()
            .filter(|c| self.is_client(&c.name))
            .map(|c| CallerCall {
                call_id: c.id.clone(),
                name: c.name.clone(),
                arguments: if c.arguments.trim().is_empty() {
                    "{}".to_string()
                } else {
                    c.arguments.clone()
                },
            })
            .collect()
    }

    /// Every one of `calls` returned the same result past the cycle warning: asking the caller
    /// again would teach the model nothing (the loop then stops as for its own stuck calls).
    pub(super) fn callers_stuck(&self, calls: &[CallerCall]) -> bool {
        !calls.is_empty()
            && calls.iter().all(|c| {
                // As the continuation records it (`Checkpoint::answer_pending`).
                let args = serde_json::from_str(&c.arguments)
                    .unwrap_or_else(|_| serde_json::Value::String(c.arguments.clone()));
                self.cycles.stuck(&c.name, &args)
            })
    }

    /// Ends the loop waiting for the caller's outputs: the checkpoint naming the calls is made
    /// durable first (it is what the continuation starts from), then `client_tool_calls`.
    pub(super) async fn pause(&mut self, calls: Vec<CallerCall>) -> Next {
        self.pausing = false;
        self.awaiting = calls;
        if let Err(e) = self.save_durably(&[]).await {
            tracing::warn!(error = %e, "the pause for caller tools could not be recorded; the run fails");
            self.status = RunStatus::Failed;
            self.error = Some(format!(
                "the pause for caller tools could not be recorded: {e}"
            ));
            self.brief =
                "Sorry, the run could not wait for your tools: its state could not be saved."
                    .to_string();
            return Next::Stop;
        }
        self.emit(StepEvent::CallerToolCalls {
            iteration: self.iterations,
            calls: self.awaiting.clone(),
        });
        self.status = RunStatus::RequiresAction;
        Next::Stop
    }
}
