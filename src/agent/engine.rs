//! [`ReActAgent`]: binds one model, a tool registry and hooks, and runs one query through the
//! two phases of a run — the tool loop (`tool_loop.rs`) and answer synthesis
//! (`synthesis.rs`) — emitting every event of docs/api.md from `start` to `done`.

use std::sync::Arc;
use std::time::Instant;

use super::checkpoint::Resume;
use super::events::{AgentEvent, AnswerEvent, Engine, Mode, StartEvent, StepEvent};
use super::hooks::HookRunner;
use super::run::{AgentResult, RunHandles, RunInput};
use super::selection::select_tools;
use super::settings::AgentConfig;
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
        let streams = self.llm.synthesis().streams_replies();
        let mut result = self.loop_run(&input, &handles, streams).await;
        result.outcome.usage += self.usage_before;
        self.conclude(result, &input, &handles, started).await
    }

    /// The tool loop alone (tool selection included): only `step` and `compact` events, no
    /// `start`, no synthesis, no `done`. `outcome.answer` is the brief answer. A DAG step
    /// is exactly this.
    pub async fn run_loop(&self, input: &RunInput, handles: &RunHandles) -> AgentResult {
        self.loop_run(input, handles, false).await
    }

    /// The tool loop; `streams`: its calls stream and answer candidates reach the client.
    async fn loop_run(&self, input: &RunInput, handles: &RunHandles, streams: bool) -> AgentResult {
        let events = &handles.events;
        let mut usage = Usage::default();
        let tools = if self.tools.len() > self.config.tool_selection_threshold as usize {
            let selection = tokio::select! {
                _ = handles.cancel.cancelled() => None,
                // Boxed: only runs over many tools select, and inline it would add its size to every run's task.
                s = Box::pin(select_tools(self.llm.as_ref(), &input.query, &self.tools, self.config.tool_selection_max as usize)) => Some(s),
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
        let mut lr = LoopRun::new(self.setup(self.mode(), tools, streams), input, handles);
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
        let streams = self.llm.synthesis().streams_replies();
        let setup = self.setup(mode, tools, streams);
        let (mut lr, in_flight) = LoopRun::resume(setup, &input, &handles, cp);
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

    fn setup(&self, mode: Mode, tools: ToolRegistry, streams: bool) -> LoopSetup<'_> {
        LoopSetup {
            config: &self.config,
            system_prompt: self.system_prompt.as_deref(),
            llm: &self.llm,
            compact_llm: &self.compact_llm,
            hooks: self.hooks.clone(),
            budget: self.context_budget(),
            mode,
            tools,
            streams,
        }
    }
}

mod conclude;
