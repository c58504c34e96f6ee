//! A reply's tool calls run the same way in both modes: the per-reply limit, run-unique ids,
//! the caller's calls set aside for the pause, the run's own under the repeat rule, each result
//! in the history (native: a `tool` message; JSON mode: an `Observation:` user message), the
//! safeguards after all of them.

use super::*;
use crate::agent::caller_tools::is_caller_tool;
use crate::llm::{Continuity, ToolCall};

/// The assistant message that carries a native reply's calls (JSON mode stored its reply as
/// text before parsing it).
pub(super) struct NativeReply {
    pub content: String,
    pub continuity: Option<Continuity>,
}

impl LoopRun<'_> {
    /// Runs a reply's `calls` and says how the loop goes on.
    pub(super) async fn run_calls(
        &mut self,
        mut calls: Vec<ToolCall>,
        native: Option<NativeReply>,
    ) -> Next {
        let asked = calls.len();
        calls.truncate(self.calls_allowed());
        let ran = calls.len();
        self.call_ids.assign(self.iterations, &mut calls);
        let client = self.caller_calls(&calls);
        self.pausing = !client.is_empty();
        let pending = self.pending_calls(&mut calls);
        let pending_none = pending.is_empty();
        // The caller's calls stay in the assistant message: their results come with the
        // continuation, right after the run's own.
        if let Some(reply) = native {
            self.messages.push(
                Message::assistant_tool_calls(reply.content, calls)
                    .with_continuity(reply.continuity),
            );
        }
        let batch = self.execute(pending).await;
        if batch.stopped {
            return self.stop_repeated(batch);
        }
        let (executed, cancelled) = (batch.executed, batch.cancelled);
        for e in &executed {
            let r = &e.record;
            let message = self.result_message(&r.call_id, &r.observation, r.error);
            self.messages.push(message);
        }
        let stuck = self.after_tools(executed);
        if cancelled {
            self.cancelled();
            return Next::Stop;
        }
        if !client.is_empty() {
            // Only the caller's calls, all of them stuck: no pause for results already known.
            if pending_none && self.callers_stuck(&client) {
                self.stop_stuck();
                return Next::Stop;
            }
            return self.pause(client).await;
        }
        if stuck {
            self.stop_stuck();
            return Next::Stop;
        }
        self.calls_dropped(asked, ran);
        // JSON mode took the user's follow-ups before its calls, from the reply's text.
        if self.mode == Mode::Native {
            self.drain_interrupts();
        }
        Next::Continue
    }

    /// The run's own calls of a reply, to execute (the caller's wait for the caller). They
    /// read the arguments; the reply's calls then move into the history uncopied (a reply's
    /// arguments may be megabytes).
    fn pending_calls(&self, calls: &mut [crate::llm::ToolCall]) -> Vec<PendingCall> {
        let max_args = self.config.max_tool_arguments_bytes;
        calls
            .iter_mut()
            .filter(|c| !is_caller_tool(&self.client_tools, &c.name))
            .map(|c| PendingCall {
                call_id: c.id.clone(),
                tool: c.name.clone(),
                arguments: parse_arguments(&mut c.arguments, max_args),
            })
            .collect()
    }

    /// A call's result as the history holds it in this run's mode.
    pub(super) fn result_message(&self, call_id: &str, observation: &str, error: bool) -> Message {
        match self.mode {
            Mode::Native => {
                Message::tool(call_id.to_string(), observation.to_string()).failed(error)
            }
            Mode::Json => Message::user(prompts::observation(observation)),
        }
    }
}

/// Tool-call arguments from the provider: empty means `{}`; invalid JSON is kept raw so the
/// LLM gets an error observation instead of a crash. Arguments over `max` bytes are not parsed
/// nor kept, in the call or in the history: only their size is ([`prompts::omitted_arguments`]).
fn parse_arguments(raw: &mut String, max: usize) -> Result<Value, String> {
    if raw.len() > max {
        let kept = prompts::omitted_arguments(raw.len(), max);
        // The history keeps valid JSON in place of the arguments it drops.
        *raw = serde_json::json!({ "omitted": kept }).to_string();
        return Err(kept);
    }
    if raw.trim().is_empty() {
        return Ok(Value::Object(Map::new()));
    }
    serde_json::from_str(raw).map_err(|_| raw.to_string())
}
