//! [`ReActAgent`]: binds one model, a tool registry and hooks, and runs one query through the
//! two phases of a run — the tool loop (`tool_loop.rs`) and answer synthesis
//! (`synthesis.rs`) — emitting every event of docs/api.md from `start` to `done`.

use std::sync::Arc;
use std::time::Instant;

use super::checkpoint::Resume;
use super::events::{AgentEvent, AnswerEvent, Engine, Mode, RunStatus, StartEvent, StepEvent};
use super::hooks::HookRunner;
use super::run::{AgentResult, RunHandles, RunInput};
use super::selection::select_tools;
use super::settings::AgentConfig;
use super::synthesis::{fallback_tail, stream_answer, trace_limit, AnswerSoFar, TraceLimits};
use super::tool_loop::{LoopRun, LoopSetup};
use crate::llm::{Llm, Usage};
use crate::tools::ToolRegistry;

/// One model, one tool set, one hook chain: a new model means a new agent.
pub struct ReActAgent {
    llm: Arc<dyn Llm>,
    compact_llm: Arc<dyn Llm>,
    tools: ToolRegistry,
    hooks: Arc<HookRunner>,
    config: AgentConfig,
    /// A mode asked for explicitly; native falls back to JSON when the model cannot do it.
    mode: Option<Mode>,
    /// The role part of the system prompt; the default role when `None`.
    system_prompt: Option<String>,
    /// Spent for this run before the engine started (see [`ReActAgent::with_usage_before`]).
    usage_before: Usage,
}

impl ReActAgent {
    pub fn new(
        llm: Arc<dyn Llm>,
        tools: ToolRegistry,
        hooks: HookRunner,
        config: AgentConfig,
    ) -> Self {
        Self {
            compact_llm: llm.clone(),
            llm,
            tools,
            hooks: Arc::new(hooks),
            config,
            mode: None,
            system_prompt: None,
            usage_before: Usage::default(),
        }
    }

    /// Asks for a mode; `None` lets the model's abilities decide.
    pub fn with_mode(mut self, mode: Option<Mode>) -> Self {
        self.mode = mode;
        self
    }

    /// The role part of the system prompt (a conversation's `system_prompt`).
    pub fn with_system_prompt(mut self, prompt: Option<String>) -> Self {
        self.system_prompt = prompt;
        self
    }

    /// Uses another model for context compaction only (`compact_model`).
    pub fn with_compact_llm(mut self, llm: Arc<dyn Llm>) -> Self {
        self.compact_llm = llm;
        self
    }

    pub fn config(&self) -> &AgentConfig {
        &self.config
    }

    /// The mode this agent's runs use.
    pub fn mode(&self) -> Mode {
        let native_ok = self.config.use_native_tools && self.llm.abilities().tool_call;
        match self.mode {
            Some(Mode::Json) => Mode::Json,
            _ if native_ok => Mode::Native,
            _ => Mode::Json,
        }
    }

    /// The prompt budget the context guard enforces.
    pub fn context_budget(&self) -> usize {
        let (window, output) = (self.llm.context_window(), self.llm.max_output_tokens());
        self.config.context_budget_for(window, output) as usize
    }

    /// Counts `usage` (calls made for this run before the engine started, such as the `auto`
    /// routing call of `engine: auto`) in the run's usage.
    pub fn with_usage_before(mut self, usage: Usage) -> Self {
        self.usage_before = usage;
        self
    }

    /// Runs one query to completion, emitting `start` … `done`. Never panics on LLM or tool
    /// failure; cancellation through `handles.cancel` stops it at the next await point.
    pub async fn run(&self, input: RunInput, handles: RunHandles) -> AgentResult {
        let started = Instant::now();
        handles.events.send(AgentEvent::Start(self.start_event(
            &input,
            self.mode(),
            None,
        )));
        let mut result = self.run_loop(&input, &handles).await;
        result.outcome.usage += self.usage_before;
        self.conclude(result, &input, &handles, started).await
    }

    /// The tool loop alone (tool selection included): only `step` and `compact` events, no
    /// `start`, no synthesis, no `done`. `outcome.answer` is the brief answer. A DAG step
    /// is exactly this.
    pub async fn run_loop(&self, input: &RunInput, handles: &RunHandles) -> AgentResult {
        let events = &handles.events;
        let mut usage = Usage::default();
        let tools = if self.tools.len() > self.config.tool_selection_threshold as usize {
            let selection = tokio::select! {
                _ = handles.cancel.cancelled() => None,
                s = select_tools(self.llm.as_ref(), &input.query, &self.tools, self.config.tool_selection_max as usize) => Some(s),
            };
            match selection {
                Some(s) => {
                    usage += s.usage;
                    events.send(AgentEvent::Step(s.event));
                    s.tools
                }
                None => self.tools.clone(),
            }
        } else {
            self.tools.clone()
        };
        let mut lr = LoopRun::new(self.setup(self.mode(), tools), input, handles);
        lr.usage += usage;
        lr.run().await;
        lr.finish()
    }

    /// Goes on with a run from its checkpoint (docs/deployment.md): `step {type:"resumed"}` instead of
    /// `start` (then a `reset` if a client may hold part of an answer), the calls left in
    /// flight answered, then the loop and synthesis as usual.
    pub async fn resume(
        &self,
        input: RunInput,
        handles: RunHandles,
        resume: Resume,
        instance: &str,
    ) -> AgentResult {
        let started = Instant::now();
        let cp = resume.checkpoint;
        let mode = cp.mode;
        // The iteration the run goes on with: the one whose calls were in flight, else the next.
        let iteration = cp.iterations + u32::from(cp.in_flight.is_empty());
        let event = match resume.continues {
            Some(paused) => AgentEvent::Start(self.start_event(&input, mode, Some(paused))),
            None => AgentEvent::Step(StepEvent::Resumed {
                iteration,
                instance: instance.to_string(),
            }),
        };
        handles.events.send(event);
        if resume.reset_answer {
            handles.events.send(AgentEvent::Answer(AnswerEvent::Reset));
        }
        let tools = self.tools.filtered(&cp.tools);
        let (mut lr, in_flight) = LoopRun::resume(self.setup(mode, tools), &input, &handles, cp);
        lr.answer_in_flight(in_flight).await;
        lr.run().await;
        self.conclude(lr.finish(), &input, &handles, started).await
    }

    /// `start`; `continues`: the paused run a continuation goes on from.
    fn start_event(&self, input: &RunInput, mode: Mode, continues: Option<String>) -> StartEvent {
        StartEvent {
            run_id: input.run_id.clone(),
            conversation_id: input.conversation_id.clone(),
            model: input
                .model_name
                .clone()
                .unwrap_or_else(|| self.llm.model().to_string()),
            mode,
            engine: Engine::React,
            continues,
            trace_id: None,
        }
    }

    fn setup(&self, mode: Mode, tools: ToolRegistry) -> LoopSetup<'_> {
        LoopSetup {
            config: &self.config,
            system_prompt: self.system_prompt.as_deref(),
            llm: &self.llm,
            compact_llm: &self.compact_llm,
            hooks: self.hooks.clone(),
            budget: self.context_budget(),
            mode,
            tools,
        }
    }

    /// After the loop: synthesis (or the fallback tail) and `done`.
    async fn conclude(
        &self,
        mut result: AgentResult,
        input: &RunInput,
        handles: &RunHandles,
        started: Instant,
    ) -> AgentResult {
        let events = handles.events.clone();
        // Waiting for the caller: no answer, just `done` with the calls.
        if result.outcome.status == RunStatus::RequiresAction {
            result.outcome.answer = String::new();
            result.outcome.elapsed_ms = started.elapsed().as_millis() as u64;
            events.send(AgentEvent::Done(result.outcome.clone()));
            return result;
        }

        // Synthesis: skipped for a failed or cancelled run (the model is unusable or the user
        // stopped it); they stream their fallback text instead.
        if !matches!(
            result.outcome.status,
            RunStatus::Completed | RunStatus::MaxIterations | RunStatus::BudgetExceeded
        ) {
            result.outcome.elapsed_ms = started.elapsed().as_millis() as u64;
            for e in fallback_tail(result.outcome.clone(), AnswerSoFar::NotStarted) {
                events.send(e);
            }
            return result;
        }
        let s = stream_answer(
            self.llm.as_ref(),
            &input.query,
            &result.steps,
            &result.brief_answer,
            TraceLimits {
                truncation: self.config.synthesis_truncation,
                max_bytes: trace_limit(self.config.synthesis_max_bytes, self.context_budget()),
            },
            &events,
            &handles.cancel,
        )
        .await;
        let outcome = &mut result.outcome;
        if handles.cancel.is_cancelled() && s.fallback {
            outcome.status = RunStatus::Cancelled;
        }
        outcome.usage += s.usage;
        outcome.answer = s.answer;
        outcome.elapsed_ms = started.elapsed().as_millis() as u64;
        result.answer_fallback = s.fallback;
        result.answer_continuity = s.continuity;
        events.send(AgentEvent::Done(result.outcome.clone()));
        result
    }
}
