//! Preparing a run once its checks passed and its slot is taken: the model, tools and
//! settings bound for the request, the history it reads, its first call admitted by the
//! budgets, and the run stored with its query (and a new conversation with its seed) in one
//! transaction. `start` then launches it.

use std::sync::Arc;

use super::binding::Binding;
use super::continuation::check_caller_tools;
use super::engines::RunEngine;
use super::history::{seed, Seed};
use super::images::{image_bytes, load_images, stage_images, QueryImage};
use super::manager::{RunError, RunLabels, RunManager};
use super::request::StartRun;
use crate::agent::context::estimate_tokens;
use crate::agent::RunInput;
use crate::config::IMPLICIT_AGENT;
use crate::domain::{Engine, MessageImage, MessageKind, MessageRole};
use crate::runs::budget::ledger::Ledger;
use crate::store::{Conversation, NewArtifact, NewMessage, NewRun, RunStart};
use crate::telemetry::spans::AgentAttrs;
use crate::telemetry::{Context, RunTrace};
use uuid::Uuid;

impl RunManager {
    /// The run's agent and input; the run and its query (with its images) are stored, with
    /// the conversation when it is new. A history's images are taken from `req`.
    pub(super) async fn prepare(
        &self,
        req: &mut StartRun,
        s: &mut Starting<'_>,
    ) -> Result<Prepared, RunError> {
        let bound = self.bind_request(req, s).await?;
        let engine = run_engine(req, &s.conv, bound.engine, self.settings.dag.default_engine)?;
        let agent = self.react_agent(&bound, req.mode);
        let agent_name = s.conv.agent.as_deref().unwrap_or(IMPLICIT_AGENT);
        let trace = run_trace(s, agent_name, &bound.model);
        let seed = self.seed_of(req, s, &bound).await?;
        // Refused before anything is stored when the budget cannot take its first call: its
        // history and query so far, and all the model may write.
        let prompt = estimate_tokens(&seed.history, &[]) + req.query.len().div_ceil(4);
        let floor = self.call_floor(&bound.model, bound.llm.as_ref(), prompt as u64);
        self.admit_call(s.owner, floor).await?;
        let images = stage_images(std::mem::take(&mut s.images));
        let run = NewRun {
            id: s.run_id,
            conversation_id: s.conv.id,
            owner: s.owner.to_string(),
            mode: agent.mode(),
            model: bound.model.clone(),
            traceparent: trace.traceparent(),
        };
        let mut artifacts = seed.artifacts;
        artifacts.extend(images.artifacts);
        let stored = StoredStart {
            run,
            history: seed.stored,
            images: images.stored,
            artifacts,
        };
        let started_at = self.store_start(req, s, stored).await?;
        let input = RunInput {
            run_id: s.run_id.to_string(),
            conversation_id: s.conv.id.to_string(),
            query: req.query.clone(),
            history: seed.history,
            model_name: Some(bound.model.clone()),
            client_tools: req.client_tools.clone(),
            images: images.parts,
        };
        let labels = RunLabels {
            agent: agent_name.to_string(),
            trace,
        };
        let dag = self.dag_setup(bound, req.mode);
        Ok(Prepared {
            engine: RunEngine::new(engine, agent, dag),
            input,
            labels,
            started_at,
        })
    }

    /// The run's model, tools and settings for what `req` asks, the request's context in its
    /// system prompt; refused when the model cannot take the images or the caller's tools
    /// clash with the agent's.
    async fn bind_request(&self, req: &StartRun, s: &Starting<'_>) -> Result<Binding, RunError> {
        let conv = &s.conv;
        let asked = req.model.as_deref().or(conv.model.as_deref());
        let mut bound = self
            .bind(conv, asked, req.max_iterations, s.ledger.clone())
            .await?;
        if let Some(context) = &req.context {
            bound.system_prompt = Some(with_context(bound.system_prompt.as_deref(), context));
        }
        let has_images = !s.images.is_empty() || req.history.iter().any(|t| !t.images.is_empty());
        if has_images && !bound.llm.abilities().vision {
            return Err(RunError::ModelWithoutVision(bound.model.clone()));
        }
        check_caller_tools(&req.client_tools, &bound.tools.names())?;
        Ok(bound)
    }

    /// The history the run reads: a new conversation's supplied turns (taken from `req`), or
    /// the stored conversation's; with their images, as many as the run's allowance leaves
    /// after the query's, newest first.
    async fn seed_of(
        &self,
        req: &mut StartRun,
        s: &Starting<'_>,
        bound: &Binding,
    ) -> Result<Seed, RunError> {
        let allowance = self
            .settings
            .max_run_image_bytes
            .saturating_sub(image_bytes(&s.images));
        if s.is_new {
            let mut seed = seed(std::mem::take(&mut req.history), s.conv.id)?;
            load_images(&self.store, s.owner, &mut seed.history, allowance).await?;
            return Ok(seed);
        }
        let mut history = self.history(s.conv.id, &req.replaces).await?;
        history.extend(self.unanswered_turn(s.conv.id).await?);
        if !bound.llm.abilities().vision {
            // A model without vision gets a history's images as their text.
            history.iter_mut().for_each(|m| {
                m.images_to_text();
            });
        }
        load_images(&self.store, s.owner, &mut history, allowance).await?;
        Ok(Seed {
            history,
            ..Seed::default()
        })
    }

    /// Stores the run with its query in one transaction (and the conversation when new, with
    /// its seed); then drops the messages the query replaces. Returns the run's `started_at`.
    async fn store_start(
        &self,
        req: &mut StartRun,
        s: &Starting<'_>,
        stored: StoredStart,
    ) -> Result<i64, RunError> {
        let conv = &s.conv;
        let query = NewMessage {
            id: None,
            conversation_id: conv.id,
            role: MessageRole::User,
            kind: MessageKind::Query,
            content: req.query.clone(),
            run_id: Some(s.run_id),
            images: stored.images,
        };
        let started_at = self
            .store
            .start_run(RunStart {
                conversation: s.is_new.then_some(conv),
                history: stored.history,
                run: stored.run,
                query,
                artifacts: stored.artifacts,
                after_run: req.after_run,
                record: req.record.take(),
            })
            .await?;
        for id in &req.replaces {
            self.store.delete_message(conv.id, *id).await?;
        }
        Ok(started_at)
    }
}
/// What a start writes besides the query's text: the run's row, a new conversation's seed,
/// the query's images and every artifact.
struct StoredStart {
    run: NewRun,
    history: Vec<NewMessage>,
    images: Vec<MessageImage>,
    artifacts: Vec<NewArtifact>,
}

/// What a start carries from its checks through [`RunManager::prepare`] to
/// [`RunManager::launch`]: whose run, where, and what travels with it.
pub(super) struct Starting<'a> {
    pub owner: &'a str,
    pub conv: Conversation,
    pub run_id: Uuid,
    /// The conversation is new: stored with the run.
    pub is_new: bool,
    /// The caller's trace: the run's span is its child.
    pub parent: Context,
    /// The query's checked images (taken when the run is stored).
    pub images: Vec<QueryImage>,
    pub ledger: Arc<Ledger>,
}

/// A prepared run: what drives it and what it is given.
pub(super) struct Prepared {
    pub engine: RunEngine,
    pub input: RunInput,
    pub labels: RunLabels,
    /// The run's `started_at` as stored (µs).
    pub started_at: i64,
}

/// The engine a run uses: the request's, else the conversation's, else the agent's, else the
/// default; caller tools need ReAct (a plan's steps cannot wait for the caller).
fn run_engine(
    req: &StartRun,
    conv: &Conversation,
    bound: Option<Engine>,
    default: Engine,
) -> Result<Engine, RunError> {
    match (
        req.engine.or(conv.engine).or(bound),
        req.client_tools.is_empty(),
    ) {
        (e, true) => Ok(e.unwrap_or(default)),
        // 409, not 400: each field is valid alone, only the pair conflicts.
        (Some(Engine::Dag), false) => Err(RunError::Conflict(
            "client_tools are not supported by the dag engine: use engine react".into(),
        )),
        (_, false) => Ok(Engine::React),
    }
}

/// The run's span, a child of the caller's trace.
fn run_trace(s: &Starting<'_>, agent: &str, model: &str) -> RunTrace {
    RunTrace::start(
        &s.parent,
        &AgentAttrs {
            agent,
            run_id: &s.run_id.to_string(),
            conversation_id: &s.conv.id.to_string(),
            tenant: s.owner,
            model,
        },
    )
}

/// The system prompt's role (the configured one, else the default) with `context` appended as
/// its own section.
fn with_context(role: Option<&str>, context: &str) -> String {
    let role = role.unwrap_or(crate::agent::prompts::DEFAULT_ROLE);
    format!("{role}\n\n{context}")
}
