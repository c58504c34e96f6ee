//! The tool loop for both modes. One iteration: check the context budget →
//! call the LLM → process the response → execute tool(s) or stop. Interrupts, reflection,
//! cycle warnings and the checklist are appended only after tool results, so an assistant
//! `tool_calls` message is always followed by exactly its results.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};

use super::action::{action_problem, cut_answer, parse_action, response_format, Action};
use super::answer::AnswerStream;
use super::call_ids::CallIds;
use super::caller_tools::{CallerCall, RequiredAction};
use super::checkpoint::{JsonList, STEPS_KEEP_FROM};
use super::context::{estimate_tool_tokens, ContextGuard, History};
use super::events::{AgentEvent, EventSink, Mode, RunOutcome, RunStatus, SafeguardKind, StepEvent};
use super::executor::{Executed, Executor, PendingCall};
use super::hooks::HookRunner;
use super::interrupts::Interrupt;
use super::prompts;
use super::record::StepRecord;
use super::run::{AgentResult, RunHandles, RunInput};
use super::safeguards::{CycleDetector, LastExecution, ReflectionCadence};
use super::settings::AgentConfig;
use super::synthesis::{observation_answer, CANCELLED_ANSWER};
use crate::llm::content_calls::parse_content_calls;
use crate::llm::{
    ChatRequest, ChatResponse, Llm, LlmError, Message, ResponseFormat, ToolChoice, ToolDefinition,
    Usage,
};
use crate::telemetry::{with_call_kind, CallKind};
use crate::tools::ToolRegistry;
use offer::{first_messages, Offered};
use replies::Replies;

mod caller;
mod calls;
mod guard;
mod interventions;
mod json_format;
mod limits;
mod offer;
mod repeat;
mod replies;
mod resume;
mod steps;

/// What one processed response means for the loop.
enum Next {
    Continue,
    /// A final answer candidate (interrupts and checklist already considered).
    Final(String),
    /// Stop now with the status already set (cancelled).
    Stop,
}

/// What the loop takes from the agent that runs it (and nothing else of it).
pub(super) struct LoopSetup<'a> {
    pub config: &'a AgentConfig,
    /// The role part of the system prompt; the default role when `None`.
    pub system_prompt: Option<&'a str>,
    pub llm: &'a Arc<dyn Llm>,
    /// The model context compaction uses.
    pub compact_llm: &'a Arc<dyn Llm>,
    pub hooks: Arc<HookRunner>,
    /// The prompt budget the context guard enforces.
    pub budget: usize,
    pub mode: Mode,
    /// The tools of this run (after selection).
    pub tools: ToolRegistry,
    /// The loop's calls stream, their answer candidates reaching the client
    /// (`synthesis = "auto" | "never"`).
    pub streams: bool,
}

/// The state of one run's loop.
pub(super) struct LoopRun<'a> {
    config: &'a AgentConfig,
    llm: &'a Arc<dyn Llm>,
    compact_llm: &'a Arc<dyn Llm>,
    handles: &'a RunHandles,
    query: String,
    mode: Mode,
    /// Sent in the `tools` parameter (native mode only).
    tool_defs: Arc<[ToolDefinition]>,
    /// Estimated tokens of `tool_defs`, computed once per run.
    tool_tokens: usize,
    /// The run's tools as described in the JSON-mode prompt (aliased names are checked
    /// against them).
    json_tools: Arc<[ToolDefinition]>,
    /// What JSON-mode calls ask for ([`response_format`]), built once per run.
    json_format: Option<ResponseFormat>,
    call_ids: CallIds,
    executor: Executor,
    guard: ContextGuard,
    /// Shared with each request (no copy per iteration); keeps its own token estimate.
    messages: History,
    steps: Vec<StepRecord>,
    /// `steps` as checkpoints write them (only appended to, as `steps` is).
    steps_json: JsonList,
    pub iterations: u32,
    tool_calls: u32,
    /// Calls of the last reply that were not run because of a limit.
    skipped: u32,
    pub usage: Usage,
    status: RunStatus,
    brief: String,
    error: Option<String>,
    processed: Vec<Interrupt>,
    unprocessed: Vec<Interrupt>,
    cycles: CycleDetector,
    /// The run's most recent execution, for the repeat rule ([`repeat`]).
    last_run: LastExecution,
    reflection: ReflectionCadence,
    checklist_done: bool,
    last_parse_failed: bool,
    /// The run's tools (after selection), as a checkpoint names them.
    tool_names: Vec<String>,
    /// The caller's tools (docs/api.md "Caller tools"), offered beside the run's own.
    client_tools: Arc<[ToolDefinition]>,
    /// Caller tool calls the run ends waiting for (`requires_action`).
    awaiting: Vec<CallerCall>,
    /// The response being handled calls caller tools: the safeguards' messages wait, since the
    /// caller's results must follow the run's own right after the assistant's calls.
    pausing: bool,
    /// The checkpoints' fields that stay the same for the run, serialised at the first one.
    fixed_json: Option<Arc<String>>,
    /// What the next model call answers (a safeguard's prompt or the loop), for its span.
    next_call: CallKind,
    /// The replies as answer candidates (`replies.rs`).
    replies: Replies,
}

impl<'a> LoopRun<'a> {
    pub fn new(setup: LoopSetup<'a>, input: &RunInput, handles: &'a RunHandles) -> Self {
        let LoopSetup {
            config: cfg,
            system_prompt,
            llm,
            compact_llm,
            hooks,
            budget,
            mode,
            tools,
            streams,
        } = setup;
        let role = system_prompt.unwrap_or(prompts::DEFAULT_ROLE);
        let own = tools.definitions();
        let tool_names = own.iter().map(|d| d.name.clone()).collect();
        let client_tools: Arc<[ToolDefinition]> = input.client_tools.clone().into();
        let offered = Offered::new(own, &client_tools, mode, role);
        let (tool_defs, json_tools) = (offered.native, offered.json);
        let executor = Executor {
            tools,
            caller_tools: client_tools.iter().map(|d| d.name.clone()).collect(),
            hooks,
            default_timeout: Duration::from_secs(cfg.tool_timeout_s),
            events: handles.events.clone(),
            run_id: input.run_id.clone(),
            conversation_id: input.conversation_id.clone(),
            artifacts: handles.artifacts.clone(),
            slots: handles.tool_slots.clone(),
        };
        Self {
            config: cfg,
            llm,
            compact_llm,
            handles,
            query: input.query.clone(),
            mode,
            tool_tokens: estimate_tool_tokens(&tool_defs),
            tool_defs,
            json_format: match mode {
                Mode::Json => response_format(llm.abilities(), &json_tools),
                Mode::Native => None,
            },
            json_tools,
            call_ids: CallIds::default(),
            executor,
            guard: ContextGuard::new(budget),
            messages: History::new(first_messages(offered.system, input)),
            steps: Vec::new(),
            steps_json: JsonList::keeping_from(STEPS_KEEP_FROM),
            iterations: 0,
            tool_calls: 0,
            skipped: 0,
            usage: Usage::default(),
            status: RunStatus::Running,
            brief: String::new(),
            error: None,
            processed: Vec::new(),
            unprocessed: Vec::new(),
            cycles: CycleDetector::new(cfg.cycle_detection_threshold),
            last_run: LastExecution::default(),
            reflection: ReflectionCadence::new(cfg.self_reflection_interval),
            checklist_done: false,
            last_parse_failed: false,
            tool_names,
            client_tools,
            awaiting: Vec::new(),
            pausing: false,
            fixed_json: None,
            next_call: CallKind::Loop,
            replies: Replies::new(streams.then(|| AnswerStream::new(handles.events.clone()))),
        }
    }

    fn events(&self) -> &EventSink {
        &self.handles.events
    }

    fn emit(&self, step: StepEvent) {
        self.events().send(AgentEvent::Step(step));
    }

    pub async fn run(&mut self) {
        let max = self.config.max_iterations;
        loop {
            self.save(&[]);
            if self.handles.cancel.is_cancelled() {
                self.cancelled();
                break;
            }
            if self.iterations >= max {
                self.safeguard(SafeguardKind::MaxIterations, None);
                self.status = RunStatus::MaxIterations;
                self.brief = self.step_summary(&format!(
                    "I reached the limit of {max} iterations before finishing. Steps taken:\n"
                ));
                break;
            }
            if self.tool_calls_used_up() {
                self.stop_at_tool_limit();
                break;
            }
            self.iterations += 1;
            if let Err(e) = self.guard_context(false).await {
                self.fail(e);
                break;
            }
            let response = match self.call_llm().await {
                Ok(r) => r,
                Err(LlmError::Cancelled) => {
                    self.cancelled();
                    break;
                }
                Err(LlmError::BudgetExceeded(m)) => {
                    self.out_of_budget(m);
                    break;
                }
                Err(e) => {
                    tracing::warn!(error = %e, iteration = self.iterations, "LLM call failed; the run fails");
                    self.status = RunStatus::Failed;
                    self.error = Some(e.to_string());
                    self.brief = format!(
                        "Sorry, I could not complete this request: {}",
                        e.user_message()
                    );
                    break;
                }
            };
            let response = self.screen_reply(response);
            let next = match self.mode {
                Mode::Native => self.native_step(response).await,
                Mode::Json => self.json_step(response).await,
            };
            match self.settle_reply(next) {
                Next::Continue => {}
                Next::Stop => break,
                Next::Final(answer) => {
                    // Close atomically: anything that slipped in is processed if we can.
                    let left = self.handles.interrupts.close();
                    if !left.is_empty() && self.iterations < max {
                        self.inject(left);
                        continue;
                    }
                    self.unprocessed = left;
                    self.status = RunStatus::Completed;
                    self.brief = answer;
                    break;
                }
            }
        }
        // Every exit closes the queue; leftovers are reported, never lost.
        self.unprocessed.extend(self.handles.interrupts.close());
    }

    /// The run's result before synthesis: the brief answer stands as the answer until the
    /// engine streams a better one.
    pub fn finish(self) -> AgentResult {
        let loop_answer = self.replies.into_answer(self.status, &self.brief);
        AgentResult {
            outcome: RunOutcome {
                status: self.status,
                iterations: self.iterations,
                tool_calls: self.tool_calls,
                usage: self.usage,
                elapsed_ms: 0,
                mode: self.mode,
                answer: self.brief.clone(),
                synthesis: false,
                error: self.error,
                unprocessed_interrupts: self.unprocessed,
                next_run_id: None,
                dag: None,
                required_action: (self.status == RunStatus::RequiresAction).then_some(
                    RequiredAction {
                        tool_calls: self.awaiting,
                    },
                ),
                trace_id: None,
                trace_url: None,
            },
            brief_answer: self.brief,
            answer_fallback: true,
            steps: self.steps,
            messages: self.messages.into_vec(),
            processed_interrupts: self.processed,
            answer_continuity: None,
            loop_answer,
        }
    }

    /// The budget cannot take the next call: the run ends like at its iteration limit, and
    /// synthesis answers from what it found if the budget still takes that call.
    fn out_of_budget(&mut self, why: String) {
        tracing::info!(reason = %why, iteration = self.iterations, "the budget ends the run");
        self.status = RunStatus::BudgetExceeded;
        self.error = Some(format!("budget exceeded: {why}"));
        self.brief = self
            .step_summary("I stopped because the budget for this work is used up. Steps taken:\n");
    }

    fn cancelled(&mut self) {
        self.status = RunStatus::Cancelled;
        self.brief = CANCELLED_ANSWER.to_string();
    }

    /// Fallback brief answer when a limit ended the loop: what the tools returned (the values
    /// the user asked for, when the model found them but never said so), then `header` and each
    /// step.
    fn step_summary(&self, header: &str) -> String {
        let mut s = match observation_answer(&self.steps) {
            Some(found) => format!("{found}\n\n{header}"),
            None => header.to_string(),
        };
        if self.steps.is_empty() {
            s.push_str("(no tool was called)\n");
        }
        for (i, st) in self.steps.iter().enumerate() {
            let outcome = if st.blocked {
                "blocked"
            } else if st.error {
                "failed"
            } else {
                "succeeded"
            };
            s.push_str(&format!("{}. {} — {outcome}\n", i + 1, st.tool));
        }
        s
    }

    fn request(&self) -> ChatRequest {
        let mut req = ChatRequest::new(self.messages.shared());
        match self.mode {
            Mode::Native => {
                if !self.tool_defs.is_empty() {
                    req.tools = self.tool_defs.clone();
                    req.tool_choice = Some(ToolChoice::Auto);
                }
            }
            Mode::Json => req.response_format = self.json_format.clone(),
        }
        req
    }

    /// One loop call, with one forced compaction and retry on a context-overflow error.
    async fn call_llm(&mut self) -> Result<ChatResponse, LlmError> {
        let mut forced = false;
        loop {
            let req = self.request();
            let checked = self.checklist_due();
            let call = self.replies.call(
                self.llm.as_ref(),
                req,
                self.mode,
                checked,
                &self.handles.cancel,
            );
            let result = with_call_kind(self.next_call, call).await;
            self.next_call = CallKind::Loop;
            match result {
                Ok(r) => {
                    self.usage += r.usage;
                    return Ok(r);
                }
                Err(LlmError::ContextLengthExceeded(m)) if !forced => {
                    tracing::warn!(error = %m, "context length exceeded; compacting and retrying once");
                    self.usage.llm_calls += 1;
                    forced = true;
                    if let Err(e) = self.guard_context(true).await {
                        return Err(LlmError::ContextLengthExceeded(e.to_string()));
                    }
                }
                // Refused before it was made: no call to count.
                Err(e @ LlmError::BudgetExceeded(_)) => return Err(e),
                Err(e) if self.schema_refused(&e) => self.usage.llm_calls += 1,
                Err(e) => {
                    self.usage.llm_calls += 1;
                    return Err(e);
                }
            }
        }
    }
}
