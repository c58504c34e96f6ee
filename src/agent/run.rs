//! What one run takes in and leaves behind: the query with its history ([`RunInput`]), the
//! connections to the outside world ([`RunHandles`]) and the run's result ([`AgentResult`]: its
//! [`RunOutcome`] and trace). Kept apart from the engine so the loop, the executor and synthesis
//! can use them without importing the engine that drives them.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::answer::LoopAnswer;
use super::artifacts::ArtifactSink;
use super::checkpoint::CheckpointSink;
use super::events::{EventSink, RunOutcome};
use super::interrupts::{Interrupt, InterruptQueue};
use super::record::StepRecord;
use super::slots::ToolSlots;
use crate::llm::{Continuity, ImagePart, Message, ToolDefinition};

/// The query and what the agent already knows of the conversation.
#[derive(Clone, Debug, Default)]
pub struct RunInput {
    pub run_id: String,
    pub conversation_id: String,
    pub query: String,
    /// Earlier turns (queries, interrupts, answers) as plain user/assistant messages.
    pub history: Vec<Message>,
    /// The model name reported in `start` (the registry name clients use); the provider's
    /// model name when `None`.
    pub model_name: Option<String>,
    /// Tools the caller executes (docs/api.md "Caller tools"): offered to the model beside the
    /// run's own; a call of one ends the run `requires_action`.
    pub client_tools: Vec<ToolDefinition>,
    /// The query's images (docs/api.md "Images").
    pub images: Vec<ImagePart>,
}

/// The run's connections to the outside world.
#[derive(Clone)]
pub struct RunHandles {
    pub events: EventSink,
    pub interrupts: Arc<InterruptQueue>,
    pub cancel: CancellationToken,
    pub artifacts: Arc<dyn ArtifactSink>,
    /// Receives the loop's checkpoints (docs/deployment.md); `None` takes none.
    pub checkpoints: Option<CheckpointSink>,
    /// Bounds the run's tool calls executing at once (the run's share of the process's).
    pub tool_slots: ToolSlots,
}

/// Everything a run produced: how it ended (exactly what `done` said) and the engine's trace.
#[derive(Clone, Debug)]
pub struct AgentResult {
    pub outcome: RunOutcome,
    /// The loop's brief answer (or the fallback text).
    pub brief_answer: String,
    /// True when `outcome.answer` is the fallback text rather than a synthesised answer.
    pub answer_fallback: bool,
    pub steps: Vec<StepRecord>,
    /// The loop's final message list.
    pub messages: Vec<Message>,
    /// Interrupts the agent saw.
    pub processed_interrupts: Vec<Interrupt>,
    /// What the model sent with the answer beyond its text: stored with the answer, so that
    /// later runs of the conversation on the same model send it back.
    pub answer_continuity: Option<Continuity>,
    /// What the loop left for the answer phase when its replies streamed (`None`: they did
    /// not, or the engine used it up).
    pub loop_answer: Option<LoopAnswer>,
}
