//! Which engine runs a run: the request's `engine`, else the conversation's, else
//! `REAGENT_DEFAULT_ENGINE`. `auto` is settled in the run's task by one routing call
//! ([`crate::dag::route::route`]), so starting a run never waits on a model; its cost counts in
//! the run's usage and `start.engine` says what was chosen.

use std::sync::Arc;

use crate::agent::checkpoint::Resume;
use crate::agent::{ReActAgent, RunHandles, RunInput};
use crate::dag::{DagEngine, DagSetup};
use crate::domain::Engine;
use crate::llm::{Continuity, Llm, Usage};

/// A run's engine, ready to go.
pub(in crate::runs) enum RunEngine {
    React(ReActAgent),
    Dag(Box<DagEngine>),
    /// Both prepared; the router picks one.
    Auto {
        llm: Arc<dyn Llm>,
        react: ReActAgent,
        dag: Box<DagSetup>,
    },
}

impl RunEngine {
    /// Builds the engine `engine` names from the run's agent and the DAG setup.
    pub(in crate::runs) fn new(engine: Engine, react: ReActAgent, dag: DagSetup) -> Self {
        match engine {
            Engine::React => Self::React(react),
            Engine::Dag => Self::Dag(Box::new(DagEngine::new(dag))),
            Engine::Auto => Self::Auto {
                llm: dag.llm.clone(),
                react,
                dag: Box::new(dag),
            },
        }
    }

    /// Runs to `done`, routing first for `auto` ([`auto`]). Returns what the model sent with the answer
    /// beyond its text, to store with it.
    pub(in crate::runs) async fn run(
        self,
        input: RunInput,
        handles: RunHandles,
    ) -> Option<Continuity> {
        match self {
            Self::React(agent) => agent.run(input, handles).await.answer_continuity,
            // Boxed: a run's task is allocated at the size of its largest future, and the DAG's
            // and the router's would make every ReAct run pay for them.
            Self::Dag(dag) => {
                crate::telemetry::spans::current_is_workflow();
                Box::pin(dag.run(input, handles)).await;
                None
            }
            Self::Auto { llm, react, dag } => Box::pin(auto(llm, react, dag, input, handles)).await,
        }
    }

    /// Goes on from a checkpoint (docs/deployment.md). Only the ReAct loop writes checkpoints, so only a
    /// ReAct run (or an `auto` one that the router sent there) is ever resumed; a DAG run has
    /// none and is failed by recovery instead.
    pub(in crate::runs) async fn resume(
        self,
        input: RunInput,
        handles: RunHandles,
        resume: Resume,
        instance: &str,
    ) -> Option<Continuity> {
        match self {
            Self::React(agent) | Self::Auto { react: agent, .. } => {
                let result = agent.resume(input, handles, resume, instance).await;
                result.answer_continuity
            }
            Self::Dag(dag) => {
                Box::pin(dag.run(input, handles)).await;
                None
            }
        }
    }
}

/// An `auto` run: one routing call (a cancel during it means `react`, which then stops at once
/// with the cancelled tail), then the engine it chose.
async fn auto(
    llm: Arc<dyn Llm>,
    react: ReActAgent,
    dag: Box<DagSetup>,
    input: RunInput,
    handles: RunHandles,
) -> Option<Continuity> {
    let routed = tokio::select! {
        _ = handles.cancel.cancelled() => (Engine::React, Usage::default()),
        r = crate::dag::route::route(llm.as_ref(), &input.query) => r,
    };
    tracing::info!(engine = %routed.0, "auto engine routed");
    match routed {
        (Engine::Dag, usage) => {
            crate::telemetry::spans::current_is_workflow();
            let engine = DagEngine::new(*dag).with_usage_before(usage);
            engine.run(input, handles).await;
            None
        }
        (_, usage) => {
            let agent = react.with_usage_before(usage);
            agent.run(input, handles).await.answer_continuity
        }
    }
}
