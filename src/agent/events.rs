//! [`AgentEvent`]: the one place that defines the wire shape of docs/api.md. Each variant maps to an
//! SSE `event:` name ([`AgentEvent::name`]) and its serialised data is the SSE `data:` line.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::mpsc;

use super::caller_tools::{CallerCall, RequiredAction};
use super::interrupts::Interrupt;
pub use crate::domain::{AnswerSource, ArtifactRef, Engine, EventName, Mode, RunStatus};
use crate::llm::Usage;
pub use dag::{DagStatus, PlanStepView};

/// Where the engine sends events: a function called in the emitting task, in order. It must
/// not block; the agent never waits on a reader. The run manager's sink serialises the event
/// and appends it to the run's event log right there (no forwarding task, one wake-up less per
/// token); tests and benches use a channel ([`EventSink::channel`]).
#[derive(Clone)]
pub struct EventSink(Arc<dyn Fn(AgentEvent) + Send + Sync>);

impl EventSink {
    pub fn new(f: impl Fn(AgentEvent) + Send + Sync + 'static) -> Self {
        Self(Arc::new(f))
    }

    /// A sink that forwards into an unbounded channel, and its receiver.
    pub fn channel() -> (Self, mpsc::UnboundedReceiver<AgentEvent>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (tx.into(), rx)
    }

    pub fn send(&self, event: AgentEvent) {
        (self.0)(event)
    }
}

impl From<mpsc::UnboundedSender<AgentEvent>> for EventSink {
    /// Events sent after the receiver is gone are dropped.
    fn from(tx: mpsc::UnboundedSender<AgentEvent>) -> Self {
        Self::new(move |e| {
            let _ = tx.send(e);
        })
    }
}

impl std::fmt::Debug for EventSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("EventSink")
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StartEvent {
    pub run_id: String,
    pub conversation_id: String,
    pub model: String,
    pub mode: Mode,
    /// The engine that runs it (: what `auto` chose).
    #[serde(default = "react")]
    pub engine: Engine,
    /// The paused run (`requires_action`) this run goes on from with the caller's outputs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub continues: Option<String>,
    /// The run's trace (docs/deployment.md, "Tracing"), while tracing is on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
}

fn react() -> Engine {
    Engine::React
}

/// `step` events; `type` is the tag.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StepEvent {
    Thinking {
        iteration: u32,
        reasoning: String,
        /// The DAG step this event belongs to; absent in a ReAct run.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        dag_step: Option<String>,
    },
    ToolStart {
        iteration: u32,
        call_id: String,
        tool: String,
        arguments: Value,
        /// The DAG step this event belongs to; absent in a ReAct run.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        dag_step: Option<String>,
    },
    ToolEnd {
        iteration: u32,
        call_id: String,
        tool: String,
        /// As the LLM saw it, cut to 4000 characters for display.
        observation: String,
        error: bool,
        blocked: bool,
        duration_ms: u64,
        artifacts: Vec<ArtifactRef>,
        /// The DAG step this event belongs to; absent in a ReAct run.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        dag_step: Option<String>,
    },
    /// A running tool reported what it is doing (a remote A2A agent's status update).
    ToolProgress {
        iteration: u32,
        call_id: String,
        tool: String,
        message: String,
        /// The DAG step this event belongs to; absent in a ReAct run.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        dag_step: Option<String>,
    },
    Selection {
        iteration: u32,
        total_tools: usize,
        selected: Vec<String>,
        fallback: bool,
    },
    Interrupt {
        iteration: u32,
        ids: Vec<String>,
        contents: Vec<String>,
    },
    ApprovalRequired {
        iteration: u32,
        approval_id: String,
        tool: String,
        arguments: Value,
        /// The DAG step this event belongs to; absent in a ReAct run.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        dag_step: Option<String>,
    },
    /// The run goes on from its last checkpoint after its instance stopped (docs/deployment.md).
    Resumed { iteration: u32, instance: String },
    /// The model called caller tools: the run ends `requires_action` with these calls.
    #[serde(rename = "client_tool_calls")]
    CallerToolCalls {
        iteration: u32,
        calls: Vec<CallerCall>,
    },
    /// A DAG round's plan.
    Plan {
        round: u32,
        steps: Vec<PlanStepView>,
    },
    /// A DAG step changed status.
    DagStep {
        round: u32,
        step_id: String,
        status: DagStatus,
        model: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        result: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        duration_ms: Option<u64>,
    },
    /// The analyser's verdict on a round.
    Analysis {
        round: u32,
        achieved: bool,
        confidence: f64,
        reasoning: String,
    },
    /// A new round is planned; `round` is the new round's number.
    Replan { round: u32, reason: String },
    /// A tool-call limit took effect: `tool_calls_per_reply` (the reply's calls past `max` were
    /// not run; `skipped` says how many) or `tool_calls_per_run` (the run calls no more tools
    /// and its answer is written from what it has).
    Limit {
        iteration: u32,
        limit: ToolLimit,
        max: u32,
        skipped: u32,
        /// The DAG step this event belongs to; absent in a ReAct run.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        dag_step: Option<String>,
    },
    /// A safeguard of the loop acted; the text it gave the model stays internal.
    Safeguard {
        iteration: u32,
        kind: SafeguardKind,
        /// The repeated tool (`cycle_warning` only).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tool: Option<String>,
        /// The DAG step this event belongs to; absent in a ReAct run.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        dag_step: Option<String>,
    },
}

/// Which safeguard of the tool loop a `step {type:"safeguard"}` event is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SafeguardKind {
    /// The self-reflection message was appended.
    Reflection,
    /// The repeated-call warning was appended (`tool` names the tool).
    CycleWarning,
    /// The completion checklist was appended instead of accepting the answer.
    CompletionCheck,
    /// The iteration cap ended the loop; the answer is written from what the run has.
    MaxIterations,
    /// A reply only repeated calls past the cycle warning (same call, same result, more than
    /// the threshold): the loop ended and the answer is written from what the run has.
    CycleStop,
}

/// Which tool-call limit a `step {type:"limit"}` event is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolLimit {
    ToolCallsPerReply,
    ToolCallsPerRun,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CompactEvent {
    pub messages_before: usize,
    pub messages_after: usize,
    pub tokens_before: usize,
    pub tokens_after: usize,
    pub summary: String,
    /// The DAG step whose loop compacted; absent in a ReAct run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dag_step: Option<String>,
}

/// `answer` events; `status` is the tag.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum AnswerEvent {
    /// An answer begins; `source` says where it comes from (absent on a text that explains a
    /// failure or a stop, and in logs written before it existed).
    Start {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        source: Option<AnswerSource>,
    },
    Delta {
        content: String,
    },
    Reset,
    Done {
        content: String,
        fallback: bool,
    },
}

/// How a run ended, described once: the `done` event's data, and what the run manager stores
/// as the run's final state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunOutcome {
    pub status: RunStatus,
    pub iterations: u32,
    pub tool_calls: u32,
    pub usage: Usage,
    pub elapsed_ms: u64,
    pub mode: Mode,
    /// The answer the user got (synthesised, or the fallback text).
    pub answer: String,
    /// Whether a synthesis call ran (docs/configuration.md `synthesis`).
    #[serde(default)]
    pub synthesis: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Interrupts left in the queue when it closed (accepted, never seen by the agent).
    pub unprocessed_interrupts: Vec<Interrupt>,
    /// The run the server started with the follow-ups that came too late for this one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_run_id: Option<String>,
    /// DAG runs only: `engine`, `rounds`, `achieved`, `confidence`.
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    pub dag: Option<DagSummary>,
    /// `requires_action` only: the caller tool calls the run waits for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required_action: Option<RequiredAction>,
    /// The run's trace (docs/deployment.md, "Tracing"), while tracing is on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
    /// A link to the trace (`REAGENT_TRACE_URL` filled in), when configured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_url: Option<String>,
}

/// What `done` adds for a DAG run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DagSummary {
    pub engine: Engine,
    pub rounds: u32,
    pub achieved: bool,
    pub confidence: f64,
}

impl AnswerEvent {
    /// `start` with its source.
    pub fn start(source: AnswerSource) -> Self {
        AnswerEvent::Start {
            source: Some(source),
        }
    }
}

impl RunOutcome {
    /// A failed run that did no work: `answer` is what the user is told, `error` the reason.
    pub fn failed(mode: Mode, answer: impl Into<String>, error: impl Into<String>) -> Self {
        Self {
            status: RunStatus::Failed,
            iterations: 0,
            tool_calls: 0,
            usage: Usage::default(),
            elapsed_ms: 0,
            mode,
            answer: answer.into(),
            synthesis: false,
            error: Some(error.into()),
            unprocessed_interrupts: Vec::new(),
            next_run_id: None,
            dag: None,
            required_action: None,
            trace_id: None,
            trace_url: None,
        }
    }
}

/// Everything a run emits, in order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum AgentEvent {
    Start(StartEvent),
    Step(StepEvent),
    Compact(CompactEvent),
    Answer(AnswerEvent),
    Done(RunOutcome),
}

/// The static SSE name for a stored event name (`"done"` for anything unknown, as
/// [`AgentEvent::from_parts`] reads it).
pub fn static_name(name: &str) -> &'static str {
    EventName::from_stored(name).as_str()
}

impl AgentEvent {
    /// The SSE `event:` name.
    pub fn name(&self) -> &'static str {
        self.event_name().as_str()
    }

    pub fn event_name(&self) -> EventName {
        match self {
            AgentEvent::Start(_) => EventName::Start,
            AgentEvent::Step(_) => EventName::Step,
            AgentEvent::Compact(_) => EventName::Compact,
            AgentEvent::Answer(_) => EventName::Answer,
            AgentEvent::Done(_) => EventName::Done,
        }
    }

    /// The SSE `data:` line: one line of JSON.
    pub fn data_json(&self) -> String {
        // `serde_json::to_string` starts at 128 bytes and doubles, and the string lives in the
        // run's event log until the run ends: a 40-byte delta kept 128 bytes, a 2.1 KB step
        // 4 KB. Serialise into a per-thread scratch buffer instead and keep an exact-size copy.
        thread_local! {
            static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
        }
        /// A scratch buffer grown past this by a huge event is released after use.
        const KEEP: usize = 64 * 1024;
        SCRATCH.with(|scratch| {
            // Not re-entered: serialising an event never serialises another one.
            let Ok(mut buf) = scratch.try_borrow_mut() else {
                return serde_json::to_string(self).unwrap_or_else(|_| "{}".to_string());
            };
            buf.clear();
            // Serialising these plain data types cannot fail; fall back to an empty object anyway.
            let out = match serde_json::to_writer(&mut *buf, self) {
                // serde_json writes UTF-8 only, so this is always the borrowed (copied) case.
                Ok(()) => String::from_utf8_lossy(&buf).into_owned(),
                Err(_) => "{}".to_string(),
            };
            if buf.capacity() > KEEP {
                *buf = Vec::new();
            }
            out
        })
    }

    /// Rebuilds an event from its stored name and data (event logs read back from storage).
    pub fn from_parts(name: &str, data: &str) -> Result<AgentEvent, serde_json::Error> {
        Ok(match EventName::from_stored(name) {
            EventName::Start => AgentEvent::Start(serde_json::from_str(data)?),
            EventName::Step => AgentEvent::Step(serde_json::from_str(data)?),
            EventName::Compact => AgentEvent::Compact(serde_json::from_str(data)?),
            EventName::Answer => AgentEvent::Answer(serde_json::from_str(data)?),
            EventName::Done => AgentEvent::Done(serde_json::from_str(data)?),
        })
    }
}

mod dag;
#[cfg(test)]
mod tests;
mod view;

pub use view::EventView;
