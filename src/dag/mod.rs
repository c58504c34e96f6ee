//! DAG mode: a planner turns the query into a graph of steps, an executor runs the
//! independent ones concurrently — each a fresh ReAct agent ([`crate::agent::ReActAgent`], the
//! tool loop alone) on the model its `model_hint` names — an analyser judges the round and may
//! ask for another, and one streamed answer ends the run. No HTTP, no SQL: like the ReAct
//! engine it takes an LLM, tools, hooks and the run's handles, and emits the same
//! [`AgentEvent`](crate::agent::AgentEvent) stream (plus `plan`, `dag_step`, `analysis`,
//! `replan`, and `dag_step` tags on the steps' own events).
//!
//! Layout: `engine` (the rounds) and `finish` (outcome and answer) drive `planner` (over
//! `plan`: shape, validation, fallback), `executor` (scheduling, over `step`: one step's agent),
//! `analyse` and `answer` (the texts rounds pass on); `route` is `engine: auto`; `prompts`
//! holds every prompt; `setup` is what the engine, the executor and a step's agent all read.

mod analyse;
mod answer;
mod engine;
mod executor;
mod finish;
pub mod plan;
mod planner;
pub mod prompts;
pub mod route;
mod setup;
mod step;
#[cfg(test)]
mod tests;

pub use analyse::Analysis;
pub use answer::Round;
pub use engine::DagEngine;
pub use executor::StepState;
pub use finish::DagResult;
pub use setup::DagSetup;
