//! Runs that wait for their caller (docs/api.md "Caller tools"): a run that ended
//! `requires_action` keeps its checkpoint and nothing else. [`RunManager::submit_tool_outputs`]
//! starts its continuation — a new run of the conversation going on from that checkpoint with
//! the outputs as tool results — on whichever instance takes the request; a new query instead
//! answers the pending calls with [`NOT_ANSWERED`](crate::agent::caller_tools::NOT_ANSWERED)
//! ([`RunManager::unanswered_turn`]).

use std::sync::Arc;

use uuid::Uuid;

use super::engines::RunEngine;
use super::log::EventLog;
use super::manager::{LiveRun, RunError, RunLabels, RunManager};
use super::request::Started;
use crate::agent::caller_tools::{match_outputs, ToolOutput};
use crate::agent::checkpoint::{Checkpoint, Resume};
use crate::agent::context::estimate_tokens;
use crate::agent::{InterruptQueue, RunInput};
use crate::config::IMPLICIT_AGENT;
use crate::domain::RunStatus;
use crate::llm::{Message, ToolDefinition};
use crate::store::{NewRun, RunRow, EVENT_ID_BLOCK};
use crate::telemetry::spans::AgentAttrs;
use crate::telemetry::{Context, RunTrace};
use opentelemetry::trace::TraceContextExt;

/// The input of a run that goes on from a checkpoint (a continuation, or a run resumed after
/// a restart): the checkpoint carries the history, the tools and the images.
pub(in crate::runs) fn resumed_input(
    run_id: Uuid,
    conversation: Uuid,
    query: String,
    model: String,
) -> RunInput {
    RunInput {
        run_id: run_id.to_string(),
        conversation_id: conversation.to_string(),
        query,
        history: Vec::new(),
        model_name: Some(model),
        client_tools: Vec::new(),
        images: Vec::new(),
    }
}

/// Longest name of a caller tool (OpenAI's limit for function names).
const MAX_TOOL_NAME: usize = 64;

impl RunManager {
    /// Answers the pending calls of `owner`'s run `run_id` and starts the continuation: 404 for
    /// another tenant's run, 409 (`Conflict`) for a run that does not wait or is not its
    /// conversation's latest, 400 for a missing or unknown call id. Like [`RunManager::start`],
    /// the start runs in its own task so a client hanging up cannot leave it half done.
    pub async fn submit_tool_outputs(
        self: &Arc<Self>,
        owner: &str,
        run_id: Uuid,
        outputs: Vec<ToolOutput>,
    ) -> Result<Arc<LiveRun>, RunError> {
        Ok(self
            .continue_timed(owner, run_id, outputs, None)
            .await?
            .live)
    }

    /// [`RunManager::submit_tool_outputs`], with a facade's `record` of the request stored
    /// with the continuation's row, and the continuation's stored `started_at`.
    pub(in crate::runs) async fn continue_timed(
        self: &Arc<Self>,
        owner: &str,
        run_id: Uuid,
        outputs: Vec<ToolOutput>,
        record: Option<String>,
    ) -> Result<Started, RunError> {
        let (me, owner) = (self.clone(), owner.to_string());
        tokio::spawn(async move { me.continue_now(&owner, run_id, outputs, record).await })
            .await
            .map_err(|e| RunError::Internal(format!("the run start task failed: {e}")))?
    }

    async fn continue_now(
        self: &Arc<Self>,
        owner: &str,
        run_id: Uuid,
        outputs: Vec<ToolOutput>,
        record: Option<String>,
    ) -> Result<Started, RunError> {
        let run = self
            .store
            .get_run(owner, run_id)
            .await?
            .ok_or(RunError::NotFound)?;
        if run.status != RunStatus::RequiresAction {
            return Err(RunError::Conflict(format!(
                "the run is {}, not requires_action: it waits for no tool outputs",
                run.status.as_str()
            )));
        }
        let latest = self.store.latest_run(run.conversation_id).await?;
        if latest.map(|l| l.id) != Some(run.id) {
            return Err(RunError::Conflict(
                "a later run of the conversation answered this run's calls already".into(),
            ));
        }
        let mut cp = self.paused_checkpoint(run.id).await?;
        for o in &outputs {
            super::checks::check_at_most("output", &o.output, self.settings.max_query_chars)?;
        }
        let answers =
            match_outputs(&cp.awaiting, &outputs).map_err(|e| RunError::Invalid(e.to_string()))?;
        cp.answer_pending(answers);
        cp.continues = Some(run.id.to_string());
        // Stored with the continuation's row, before the caller is told: a crash after that
        // resumes the continuation with the outputs. Images are named by artifact in it.
        let first = serde_json::to_string(&cp)
            .map_err(|e| RunError::Internal(format!("the continuation's checkpoint: {e}")))?;
        // A checkpoint names stored images by artifact: their bytes are read back once here.
        let allowance = self.settings.max_run_image_bytes;
        super::images::load_images(&self.store, owner, &mut cp.messages, allowance).await?;
        let record = record.as_deref();
        self.launch_continuation(owner, &run, cp, &first, record)
            .await
    }

    /// The latest run of `owner`'s conversation, when it waits for tool outputs (else 409).
    pub async fn waiting_run(&self, owner: &str, conversation: Uuid) -> Result<Uuid, RunError> {
        let conv = self.owned(owner, conversation).await?;
        match self.store.latest_run(conv.id).await? {
            Some(run) if run.status == RunStatus::RequiresAction => Ok(run.id),
            _ => Err(RunError::Conflict(
                "the conversation's latest run waits for no tool outputs".into(),
            )),
        }
    }

    /// The checkpoint a `requires_action` run ended with.
    async fn paused_checkpoint(&self, run_id: Uuid) -> Result<Checkpoint, RunError> {
        let raw = self.store.run_checkpoint(run_id).await?.ok_or_else(|| {
            RunError::Internal("the paused run has no checkpoint to go on from".into())
        })?;
        serde_json::from_str(&raw)
            .map_err(|e| RunError::Internal(format!("unreadable checkpoint: {e}")))
    }

    /// A new run of the paused run's conversation, going on from `cp` (its calls answered;
    /// `first` is its JSON, stored with the run's row): same model, mode and iteration cap;
    /// `start.continues` names the paused run.
    async fn launch_continuation(
        self: &Arc<Self>,
        owner: &str,
        paused: &RunRow,
        cp: Checkpoint,
        first: &str,
        record: Option<&str>,
    ) -> Result<Started, RunError> {
        let conv = self.owned(owner, paused.conversation_id).await?;
        if self.shutdown.is_cancelled() {
            return Err(RunError::ShuttingDown);
        }
        // A continuation is a new run: the tenant's budgets and run cap apply.
        self.admit(owner).await?;
        let run_id = Uuid::new_v4();
        let ledger = self.ledger_for(owner, run_id, &conv);
        let (model, agent) = self
            .agent_for(
                &conv,
                Some(&paused.model),
                Some(cp.mode),
                Some(cp.max_iterations),
                ledger.clone(),
            )
            .await?;
        self.admit_next_call(owner, &model, &cp).await?;
        self.take_slot(conv.id, run_id)?;
        let agent_name = conv.agent.as_deref().unwrap_or(IMPLICIT_AGENT);
        let trace = self
            .continuation_trace(paused, agent_name, &run_id, &model)
            .await;
        let new = NewRun {
            id: run_id,
            conversation_id: conv.id,
            owner: owner.to_string(),
            mode: cp.mode,
            model: model.clone(),
            traceparent: trace.traceparent(),
        };
        let micros = self
            .store
            .create_run_from(new, first, record)
            .await
            .inspect_err(|_| {
                self.active.remove(&conv.id);
            })?;
        let input = resumed_input(run_id, conv.id, cp.query.clone(), model);
        let log = EventLog::with_ceiling(EVENT_ID_BLOCK as u64);
        let live = self.live_run_of(owner, conv.id, run_id, 1, log, ledger);
        let resume = Resume {
            checkpoint: cp,
            reset_answer: false,
            continues: Some(paused.id.to_string()),
        };
        let queue = Arc::new(InterruptQueue::new());
        let labels = RunLabels {
            agent: agent_name.to_string(),
            trace,
        };
        let engine = RunEngine::React(agent);
        self.spawn_run(live.clone(), engine, input, queue, Some(resume), labels);
        tracing::info!(run_id = %run_id, continues = %paused.id, "continuation started");
        Ok(Started::at(live, micros))
    }

    /// Refused (the run still waits) when the budget cannot take the continuation's next call,
    /// its prompt the checkpoint's messages.
    async fn admit_next_call(
        &self,
        owner: &str,
        model: &str,
        cp: &Checkpoint,
    ) -> Result<(), RunError> {
        if let Some((_, llm)) = self.models.resolve(Some(model)) {
            let prompt = estimate_tokens(&cp.messages, &[]) as u64;
            let floor = self.call_floor(model, llm.as_ref(), prompt);
            self.admit_call(owner, floor).await?;
        }
        Ok(())
    }

    /// A continuation's span: in the caller's trace when the request names one, else in the
    /// paused run's (stored with it), so the paused run and its continuation are one trace.
    async fn continuation_trace(
        &self,
        paused: &RunRow,
        agent: &str,
        run_id: &Uuid,
        model: &str,
    ) -> RunTrace {
        if !crate::telemetry::enabled() {
            return RunTrace::default();
        }
        let current = Context::current();
        let parent = match current.span().span_context().is_valid() {
            true => current,
            false => match self.store.run_traceparent(paused.id).await {
                Ok(Some(tp)) => crate::telemetry::propagation::from_traceparent(&tp),
                _ => Context::new(),
            },
        };
        let attrs = AgentAttrs {
            agent,
            run_id: &run_id.to_string(),
            conversation_id: &paused.conversation_id.to_string(),
            tenant: &paused.owner,
            model,
        };
        RunTrace::start(&parent, &attrs)
    }

    /// When the conversation's latest run waits for caller tools: its turn after its query
    /// (the assistant's calls, the run's own results) with each pending call answered
    /// [`NOT_ANSWERED`](crate::agent::caller_tools::NOT_ANSWERED), for a new query's history.
    pub(in crate::runs) async fn unanswered_turn(
        &self,
        conversation_id: Uuid,
    ) -> Result<Vec<Message>, RunError> {
        let Some(latest) = self.store.latest_run(conversation_id).await? else {
            return Ok(Vec::new());
        };
        if latest.status != RunStatus::RequiresAction {
            return Ok(Vec::new());
        }
        let mut cp = match self.paused_checkpoint(latest.id).await {
            Ok(cp) => cp,
            Err(e) => {
                tracing::warn!(run_id = %latest.id, error = %e, "the paused run's turn is left out of the history");
                return Ok(Vec::new());
            }
        };
        cp.answer_unanswered();
        // The stored history holds the paused run's query; its loop's messages follow it.
        let query = cp
            .messages
            .iter()
            .position(|m| m.pinned && m.content == cp.query);
        let turn = match query {
            Some(i) => cp.messages.split_off(i + 1),
            None => Vec::new(),
        };
        Ok(turn
            .into_iter()
            .map(|mut m| {
                m.pinned = false;
                m
            })
            .collect())
    }
}

/// Caller tools a run may take: functions with a usable, unique name that is none of the
/// run's own tools (`own`).
pub fn check_caller_tools(defs: &[ToolDefinition], own: &[String]) -> Result<(), RunError> {
    for (i, d) in defs.iter().enumerate() {
        let valid = !d.name.is_empty()
            && d.name.len() <= MAX_TOOL_NAME
            && d.name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !valid {
            return Err(RunError::Invalid(format!(
                "client_tools: '{}' is not a valid function name (1 to 64 letters, digits, '_' or '-')",
                d.name
            )));
        }
        // 409, not 400: each definition is valid alone, only the pair conflicts.
        if defs[..i].iter().any(|e| e.name == d.name) {
            return Err(RunError::Conflict(format!(
                "client_tools: '{}' is declared twice",
                d.name
            )));
        }
        if own.contains(&d.name) {
            return Err(RunError::Invalid(format!(
                "client_tools: '{}' is the name of one of the run's own tools",
                d.name
            )));
        }
        if !d.parameters.is_object() {
            return Err(RunError::Invalid(format!(
                "client_tools: the parameters of '{}' must be a JSON Schema object",
                d.name
            )));
        }
    }
    Ok(())
}
