//! The ReAct engine (SPEC §2). [`ReActAgent::run`] takes the run's inputs and handles (event
//! sink, interrupt queue, cancellation token) and returns an [`AgentResult`]; everything it
//! does is visible as [`AgentEvent`]s.

pub mod action;
pub mod artifacts;
pub mod context;
pub mod engine;
pub mod events;
pub mod executor;
pub mod hooks;
pub mod interrupts;
pub mod prompts;
pub mod safeguards;
pub mod selection;
pub mod synthesis;
mod tool_loop;

pub use engine::{AgentConfig, AgentResult, ReActAgent, RunHandles, RunInput, StepRecord};
pub use events::{AgentEvent, EventSink, Mode, RunStatus};
pub use interrupts::{Interrupt, InterruptQueue};
