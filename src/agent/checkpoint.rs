//! [`Checkpoint`]: the state of a run's tool loop at a point it can resume from (docs/deployment.md), taken
//! at the start of every iteration and again just before its tool calls run (then with those
//! calls `in_flight`). A run resumed from a checkpoint answers its in-flight calls with
//! [`INTERRUPTED_TOOL`] unless the tool is idempotent (then it runs them again), and goes on
//! with the next iteration. The reflection cadence goes on from its count; cycle detection
//! starts afresh on resume.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::caller_tools::{CallerCall, NOT_ANSWERED};
use super::events::Mode;
use super::interrupts::Interrupt;
use super::prompts;
use super::record::StepRecord;
use crate::llm::{Message, ToolDefinition, Usage};

mod json;

pub use json::{
    CheckpointJson, JsonList, CHUNK as JSON_CHUNK, KEEP_FROM as JSON_KEEP_FROM, STEPS_KEEP_FROM,
};

/// The observation of a tool call that was running when its instance stopped (docs/deployment.md).
pub const INTERRUPTED_TOOL: &str =
    "[interrupted: the instance running this tool stopped; the call was not retried]";

/// One tool call that had been asked for but not answered when the checkpoint was taken.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InFlightCall {
    pub call_id: String,
    pub tool: String,
    /// Parsed arguments, or the raw text when they were not JSON.
    pub arguments: Result<Value, String>,
}

/// What the loop needs to go on where it was.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Checkpoint {
    pub mode: Mode,
    pub query: String,
    /// The run's tools after selection.
    pub tools: Vec<String>,
    /// Iterations begun so far, and the run's limit.
    pub iterations: u32,
    pub max_iterations: u32,
    pub tool_calls: u32,
    pub usage: Usage,
    pub messages: Vec<Message>,
    pub steps: Vec<StepRecord>,
    pub processed: Vec<Interrupt>,
    pub in_flight: Vec<InFlightCall>,
    pub checklist_done: bool,
    pub last_parse_failed: bool,
    /// Tools that really ran (the reflection cadence and the checklist count them).
    #[serde(default)]
    pub executions: u32,
    /// The caller's tools offered to the model (docs/api.md "Caller tools").
    #[serde(default)]
    pub client_tools: Vec<ToolDefinition>,
    /// Calls of caller tools waiting for the caller's outputs: the run ended
    /// `requires_action` with this checkpoint.
    #[serde(default)]
    pub awaiting: Vec<CallerCall>,
    /// The paused run a continuation goes on from, in the checkpoint the continuation is
    /// stored with (the loop's own checkpoints leave it out): a continuation resumed before its
    /// first event was stored still begins with `start {continues}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub continues: Option<String>,
}

impl Checkpoint {
    /// Appends `outputs` (one per pending caller tool call, in their order) to the paused run's
    /// history as the results of its calls, and to its steps (the synthesis trace would
    /// otherwise not show them), and clears the pending calls: the checkpoint is then where its
    /// continuation goes on (docs/api.md "Caller tools").
    pub fn answer_pending(&mut self, outputs: Vec<String>) {
        let calls = std::mem::take(&mut self.awaiting);
        for (call, output) in calls.into_iter().zip(outputs) {
            self.steps.push(StepRecord {
                iteration: self.iterations,
                call_id: call.call_id.clone(),
                tool: call.name,
                arguments: serde_json::from_str(&call.arguments)
                    .unwrap_or(Value::String(call.arguments)),
                observation: output.clone(),
                error: false,
                blocked: false,
                duration_ms: 0,
            });
            self.messages.push(match self.mode {
                Mode::Native => Message::tool(call.call_id, output),
                Mode::Json => Message::user(prompts::observation(&output)),
            });
        }
    }

    /// Answers every pending caller tool call with [`NOT_ANSWERED`].
    pub fn answer_unanswered(&mut self) {
        let outputs = vec![NOT_ANSWERED.to_string(); self.awaiting.len()];
        self.answer_pending(outputs);
    }
}

/// Where a run's checkpoints go, as the JSON of a [`Checkpoint`] (the run manager stores them
/// with the run's events). The loop serialises them itself, keeping the JSON of its history
/// between checkpoints in shared chunks ([`JsonList`]), so a checkpoint neither serialises nor
/// copies the whole history; the writer joins the pieces when it stores one.
pub type CheckpointSink = Arc<dyn Checkpoints>;

/// Why a checkpoint could not be made durable; the calls it lists must then not be made.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct NotRecorded(pub String);

/// What [`Checkpoints::save_durably`] resolves to.
pub type Recorded = futures::future::BoxFuture<'static, Result<(), NotRecorded>>;

/// A run's checkpoint store. Most checkpoints are stored with the run's next write; the one
/// listing a call that must not run twice is stored before the call leaves the process, so an
/// instance that resumes the run knows the call may have started.
pub trait Checkpoints: Send + Sync {
    /// Stores `checkpoint` with the run's next write (a newer one replaces it until then).
    fn save(&self, checkpoint: CheckpointJson);

    /// Stores `checkpoint` now and resolves once it is durable — or fails, e.g. when another
    /// instance took the run over (then this one must not act for the run any more).
    fn save_durably(&self, checkpoint: CheckpointJson) -> Recorded;
}

/// A plain function keeps checkpoints in memory (tests, benchmarks): saved is durable there.
impl<F: Fn(CheckpointJson) + Send + Sync> Checkpoints for F {
    fn save(&self, checkpoint: CheckpointJson) {
        self(checkpoint)
    }

    fn save_durably(&self, checkpoint: CheckpointJson) -> Recorded {
        self(checkpoint);
        Box::pin(std::future::ready(Ok(())))
    }
}

/// The fields of a [`Checkpoint`] that stay the same for the whole run, serialised once per
/// run ([`Self::to_json`]) and shared by each of its checkpoints.
#[derive(Serialize)]
pub struct CheckpointFixed<'a> {
    pub mode: Mode,
    pub query: &'a str,
    pub tools: &'a [String],
    pub max_iterations: u32,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub client_tools: &'a [ToolDefinition],
}

impl CheckpointFixed<'_> {
    /// The JSON object of these fields, left open (no closing brace) for [`CheckpointHead`].
    pub fn to_json(&self) -> serde_json::Result<Arc<String>> {
        let mut text = serde_json::to_string(self)?;
        text.pop();
        Ok(Arc::new(text))
    }
}

/// A call in flight as a checkpoint writes it ([`InFlightCall`]), borrowed from the loop.
#[derive(Serialize)]
pub struct InFlightRef<'a> {
    pub call_id: &'a str,
    pub tool: &'a str,
    pub arguments: &'a Result<Value, String>,
}

impl<'a> From<&'a InFlightCall> for InFlightRef<'a> {
    fn from(c: &'a InFlightCall) -> Self {
        Self {
            call_id: &c.call_id,
            tool: &c.tool,
            arguments: &c.arguments,
        }
    }
}

/// The rest of a [`Checkpoint`]'s fields borrowed from the loop, except the two lists that grow
/// with the run (messages, steps), which [`CheckpointHead::to_json`] takes already serialised.
pub struct CheckpointHead<'a> {
    pub iterations: u32,
    pub tool_calls: u32,
    pub usage: Usage,
    pub processed: &'a [Interrupt],
    pub in_flight: Vec<InFlightRef<'a>>,
    pub checklist_done: bool,
    pub last_parse_failed: bool,
    pub executions: u32,
    pub awaiting: &'a [CallerCall],
}

/// What a checkpoint's own head usually takes (it is grown when not).
const HEAD_CAPACITY: usize = 320;

impl CheckpointHead<'_> {
    /// The checkpoint's JSON, as `serde_json::to_string(&Checkpoint)` would write it (fields
    /// in another order): the run's `fixed` fields ([`CheckpointFixed::to_json`]), shared, then
    /// these, then `messages` and `steps` writing those two arrays.
    pub fn to_json(
        &self,
        fixed: &Arc<String>,
        messages: impl FnOnce(&mut CheckpointJson) -> serde_json::Result<()>,
        steps: impl FnOnce(&mut CheckpointJson) -> serde_json::Result<()>,
    ) -> serde_json::Result<CheckpointJson> {
        let mut head = String::with_capacity(HEAD_CAPACITY);
        self.write_fields(&mut head)?;
        head.push_str(",\"messages\":");
        let mut out = CheckpointJson::default();
        out.push_shared(fixed);
        out.push_owned(head);
        messages(&mut out)?;
        out.push_str(",\"steps\":");
        steps(&mut out)?;
        out.push_str("}");
        Ok(out)
    }

    /// These fields, each after a comma, continuing the fixed fields' object. Written by hand:
    /// two checkpoints per iteration made serde_json's escaping of every key and its dispatch
    /// per field most of a head's cost (BENCHMARKS.md); the lists of structs,
    /// usually empty, still go through serde.
    fn write_fields(&self, out: &mut String) -> serde_json::Result<()> {
        let mut digits = itoa::Buffer::new();
        let mut number = |out: &mut String, key: &str, n: u64| {
            out.push_str(key);
            out.push_str(digits.format(n));
        };
        let u = &self.usage;
        number(out, ",\"iterations\":", self.iterations.into());
        number(out, ",\"tool_calls\":", self.tool_calls.into());
        number(out, ",\"usage\":{\"prompt_tokens\":", u.prompt_tokens);
        number(out, ",\"completion_tokens\":", u.completion_tokens);
        number(out, ",\"total_tokens\":", u.total_tokens);
        number(out, ",\"llm_calls\":", u.llm_calls);
        number(out, ",\"cache_read_tokens\":", u.cache_read_tokens);
        number(out, ",\"cache_write_tokens\":", u.cache_write_tokens);
        out.push_str(",\"cost_usd\":");
        out.push_str(&serde_json::to_string(&u.cost_usd).unwrap_or_else(|_| "0".into()));
        number(out, ",\"unpriced_calls\":", u.unpriced_calls);
        number(out, ",\"estimated_calls\":", u.estimated_calls);
        out.push('}');
        number(out, ",\"executions\":", self.executions.into());
        let flag = |b: bool| if b { "true" } else { "false" };
        out.push_str(",\"checklist_done\":");
        out.push_str(flag(self.checklist_done));
        out.push_str(",\"last_parse_failed\":");
        out.push_str(flag(self.last_parse_failed));
        out.push_str(",\"processed\":");
        write_list(out, self.processed)?;
        out.push_str(",\"in_flight\":");
        write_list(out, &self.in_flight)?;
        if !self.awaiting.is_empty() {
            out.push_str(",\"awaiting\":");
            write_list(out, self.awaiting)?;
        }
        Ok(())
    }
}

/// `items` as a JSON array.
fn write_list<T: Serialize>(out: &mut String, items: &[T]) -> serde_json::Result<()> {
    if items.is_empty() {
        out.push_str("[]");
    } else {
        out.push_str(&serde_json::to_string(items)?);
    }
    Ok(())
}

/// A run to go on with: its checkpoint, and whether a client may have seen part of an answer
/// the previous instance streamed (then `answer {status:"reset"}` follows `resumed`).
#[derive(Clone, Debug, PartialEq)]
pub struct Resume {
    pub checkpoint: Checkpoint,
    pub reset_answer: bool,
    /// A continuation (docs/api.md "Caller tools"): a new run going on from the paused run
    /// named here, which starts with `start {continues}` instead of `step {type:"resumed"}`.
    pub continues: Option<String>,
}

#[cfg(test)]
mod tests;
