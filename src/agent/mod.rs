//! The ReAct engine. [`ReActAgent::run`] takes the run's inputs and handles (event
//! sink, interrupt queue, cancellation token) and returns an [`AgentResult`]: the run's
//! [`RunOutcome`] (what `done` carries) and its trace. Everything it does is visible as
//! [`AgentEvent`]s.
//!
//! Layout: `engine` drives a run through `tool_loop` (which runs calls through `executor`) and
//! `synthesis` (`ReActAgent::run_loop` is the loop alone, which is what a DAG step runs);
//! `answer` holds what the client has seen of the answer and decides which reply may be it; `run`
//! holds what a run takes in and returns, `record` the record of each tool call (shared by the
//! run's result and its checkpoints), `settings` the engine's settings (the `[react]` section),
//! `slots` the bound on tool calls executing at once. The values shared with other layers (status, mode, artifact references, event names) come
//! from [`crate::domain`]; no file here imports `engine`.

pub mod action;
pub mod answer;
pub mod artifacts;
pub mod call_ids;
pub mod caller_tools;
pub mod checkpoint;
pub mod context;
pub mod engine;
pub mod events;
pub mod executor;
pub mod hooks;
pub mod interrupts;
pub mod prompts;
mod record;
mod run;
pub mod safeguards;
pub mod selection;
mod settings;
pub mod slots;
pub mod synthesis;
mod tool_loop;

pub use engine::ReActAgent;
pub use events::{AgentEvent, EventSink, Mode, RunOutcome, RunStatus};
pub use interrupts::{Interrupt, InterruptQueue};
pub use record::StepRecord;
pub use run::{AgentResult, RunHandles, RunInput};
pub use settings::AgentConfig;
pub use slots::{ToolPool, ToolSlots};
