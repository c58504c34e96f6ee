//! Executes the tool calls of one LLM response: PreToolUse hooks, the tool itself (in its own
//! task, so a panic is contained and a timeout can abort it), artifacts, PostToolUse hooks and
//! the `tool_start`/`tool_end` events. All calls of a batch run concurrently, identical ones
//! once ([`batch`]); cancellation aborts the unfinished ones and gives them the synthetic
//! cancelled result (docs/api.md).

use std::sync::Arc;
use std::time::{Duration, Instant};

use opentelemetry::context::FutureExt as _;
use serde_json::Value;
use tokio::task::JoinHandle;

use super::artifacts::ArtifactSink;
use super::context::json_len;
use super::events::{AgentEvent, ArtifactRef, EventSink, StepEvent};
use super::hooks::{HookContext, HookRunner, PostContext, PreOutcome};
use super::prompts;
use super::record::StepRecord;
use super::slots::ToolSlots;
use super::synthesis::{json_prefix, truncate_chars};
use crate::telemetry::{self, Context, ToolSpan};
use crate::tools::{Progress, ToolError, ToolOutput, ToolRegistry};

/// What the LLM sees for a call the cancellation interrupted.
pub const CANCELLED_RESULT: &str = "[cancelled: tool execution did not complete]";

/// `tool_end.observation` is cut to this many characters for display (docs/api.md).
pub const DISPLAY_OBSERVATION_CHARS: usize = 4000;

/// `tool_start.arguments` larger than this (as JSON) are shown as the first
/// [`DISPLAY_OBSERVATION_CHARS`] characters of their text: the tool gets them whole, but a
/// model's megabytes of arguments are not copied into every event, log and database row.
pub const DISPLAY_ARGUMENTS_BYTES: usize = 64 * 1024;

/// A call the LLM asked for. `arguments` is `Err(raw text)` when it was not valid JSON, or
/// `Err` of [`prompts::omitted_arguments`] when they were over the size limit.
#[derive(Clone, Debug)]
pub struct PendingCall {
    pub call_id: String,
    pub tool: String,
    pub arguments: Result<Value, String>,
}

/// One finished call.
#[derive(Clone, Debug)]
pub struct Executed {
    pub record: StepRecord,
    /// The tool actually ran (not blocked, not unknown, not malformed, not cancelled): these
    /// count for reflection, the checklist and cycle detection.
    pub ran: bool,
    /// The result of an identical call of the same batch, which ran once for both: counted
    /// nowhere but in the run's tool calls.
    pub copy: bool,
}

/// Everything needed to execute calls for one run.
pub struct Executor {
    pub tools: ToolRegistry,
    /// The names of the caller's tools, which an unknown name's error lists beside the agent's:
    /// the caller runs them, but the model may call them like any other.
    pub caller_tools: Vec<String>,
    pub hooks: Arc<HookRunner>,
    pub default_timeout: Duration,
    pub events: EventSink,
    pub run_id: String,
    pub conversation_id: String,
    pub artifacts: Arc<dyn ArtifactSink>,
    /// A call executes only while it holds one of these (hooks and approvals need none).
    pub slots: ToolSlots,
}

/// Aborts the tool's task when the call is dropped (timeout or cancellation).
struct AbortOnDrop<T>(JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_string()
    }
}

fn display_args(args: &Result<Value, String>) -> Value {
    match args {
        Ok(v) => v.clone(),
        Err(raw) => Value::String(raw.clone()),
    }
}

/// The arguments a `tool_start` event shows: whole unless large ([`DISPLAY_ARGUMENTS_BYTES`]).
fn shown_args(args: &Result<Value, String>) -> Value {
    match args {
        Ok(v) if json_len(v) <= DISPLAY_ARGUMENTS_BYTES => v.clone(),
        Ok(v) => Value::String(json_prefix(v, DISPLAY_OBSERVATION_CHARS)),
        Err(raw) => Value::String(truncate_chars(raw, DISPLAY_OBSERVATION_CHARS)),
    }
}

impl Executor {
    /// Every name the model may call: the agent's tools, then the caller's.
    fn tool_names(&self) -> Vec<String> {
        let mut names = self.tools.names();
        names.extend(self.caller_tools.iter().cloned());
        names
    }

    fn emit(&self, step: StepEvent) {
        self.events.send(AgentEvent::Step(step));
    }

    /// Where the call reports progress: `tool_progress` steps, each note cut for display.
    fn progress(&self, iteration: u32, call: &PendingCall) -> Progress {
        let events = self.events.clone();
        let (call_id, tool) = (call.call_id.clone(), call.tool.clone());
        Progress::new(move |note| {
            events.send(AgentEvent::Step(StepEvent::ToolProgress {
                iteration,
                call_id: call_id.clone(),
                tool: tool.clone(),
                message: truncate_chars(&note, DISPLAY_OBSERVATION_CHARS),
                dag_step: None,
            }))
        })
    }

    /// The calls with each name that means one tool of the run, but is not its name, replaced
    /// by the tool's ([`ToolRegistry::resolve`]); unknown and ambiguous names stay as written.
    pub fn resolve_names(&self, mut calls: Vec<PendingCall>) -> Vec<PendingCall> {
        for c in &mut calls {
            if let Some(name) = self.tools.resolve(&c.tool).filter(|n| *n != c.tool) {
                tracing::debug!(written = %c.tool, tool = name, "tool name resolved");
                c.tool = name.to_string();
            }
        }
        calls
    }

    /// A call that was running when its instance stopped, answered without running it again
    /// (docs/deployment.md): its `tool_end` carries the interrupted result.
    pub fn interrupted(&self, iteration: u32, call: &PendingCall) -> Executed {
        self.answered(iteration, call, super::checkpoint::INTERRUPTED_TOOL)
    }

    /// Calls answered with the error `observation` without being made: each gets its
    /// `tool_start` and a `tool_end` carrying the error.
    pub fn not_run(
        &self,
        iteration: u32,
        calls: Vec<PendingCall>,
        observation: &str,
    ) -> Vec<Executed> {
        calls
            .iter()
            .map(|c| {
                self.emit_start(iteration, c);
                self.answered(iteration, c, observation)
            })
            .collect()
    }

    /// The `tool_start` of a call, with its arguments cut for display when large.
    pub(super) fn emit_start(&self, iteration: u32, c: &PendingCall) {
        self.emit(StepEvent::ToolStart {
            iteration,
            call_id: c.call_id.clone(),
            tool: c.tool.clone(),
            arguments: shown_args(&c.arguments),
            dag_step: None,
        });
    }

    /// A call not run, answered with the error `observation` (its `tool_end` emitted).
    fn answered(&self, iteration: u32, call: &PendingCall, observation: &str) -> Executed {
        let record = StepRecord {
            iteration,
            call_id: call.call_id.clone(),
            tool: call.tool.clone(),
            arguments: display_args(&call.arguments),
            observation: observation.to_string(),
            error: true,
            blocked: false,
            duration_ms: 0,
        };
        self.emit_end(&record, Vec::new());
        Executed {
            record,
            ran: false,
            copy: false,
        }
    }

    pub(super) fn emit_end(&self, r: &StepRecord, artifacts: Vec<ArtifactRef>) {
        self.emit(StepEvent::ToolEnd {
            iteration: r.iteration,
            call_id: r.call_id.clone(),
            tool: r.tool.clone(),
            observation: truncate_chars(&r.observation, DISPLAY_OBSERVATION_CHARS),
            error: r.error,
            blocked: r.blocked,
            duration_ms: r.duration_ms,
            artifacts,
            dag_step: None,
        });
    }

    /// One call; its context is built once, moved through both hook chains and into the
    /// record (the engine's per-iteration cost is mostly such copies).
    pub(super) async fn execute_one(&self, iteration: u32, call: &PendingCall) -> Executed {
        let started = Instant::now();
        let mut artifacts = Vec::new();
        let mut ran = false;
        let mut blocked = false;
        let arguments = display_args(&call.arguments);
        let Some(tool) = self.tools.get(&call.tool).cloned() else {
            return self.unknown_tool(iteration, call, arguments, started);
        };
        let mut ctx = HookContext {
            run_id: self.run_id.clone(),
            conversation_id: self.conversation_id.clone(),
            iteration,
            call_id: call.call_id.clone(),
            tool: call.tool.clone(),
            arguments,
            tool_writes: tool.writes(),
            requires_approval: tool.requires_approval(),
            events: Some(self.events.clone()),
        };
        let (observation, error) = match &call.arguments {
            Err(kept) => unusable_arguments(&call.tool, kept),
            Ok(_) => match self.hooks.pre_tool_use(&mut ctx).await {
                PreOutcome::Blocked(reason) => {
                    blocked = true;
                    (
                        format!("Error: the call to '{}' was blocked: {reason}", call.tool),
                        false,
                    )
                }
                PreOutcome::Allowed(args) => {
                    ran = true;
                    let progress = self.progress(iteration, call);
                    self.invoke(&tool, &call.call_id, args, progress, &mut artifacts)
                        .await
                }
            },
        };
        let duration_ms = started.elapsed().as_millis() as u64;
        let mut post = PostContext {
            call: ctx,
            observation,
            error,
            blocked,
            duration_ms,
        };
        let outcome = self.hooks.post_tool_use(&mut post).await;
        let record = StepRecord {
            iteration,
            call_id: post.call.call_id,
            tool: post.call.tool,
            arguments: post.call.arguments,
            observation: outcome.observation,
            error: outcome.error,
            blocked,
            duration_ms,
        };
        self.emit_end(&record, artifacts);
        Executed {
            record,
            ran,
            copy: false,
        }
    }

    /// A call of a tool the run does not have: an error observation naming the ones it has.
    fn unknown_tool(
        &self,
        iteration: u32,
        call: &PendingCall,
        arguments: Value,
        started: Instant,
    ) -> Executed {
        let record = StepRecord {
            iteration,
            call_id: call.call_id.clone(),
            tool: call.tool.clone(),
            arguments,
            observation: prompts::unknown_tool(&call.tool, &self.tool_names()),
            error: true,
            blocked: false,
            duration_ms: started.elapsed().as_millis() as u64,
        };
        self.emit_end(&record, Vec::new());
        Executed {
            record,
            ran: false,
            copy: false,
        }
    }

    /// Runs the allowed call in one of the run's tool slots, within its span: the observation
    /// and whether it is an error (its artifacts go to `artifacts`).
    async fn invoke(
        &self,
        tool: &Arc<dyn crate::tools::Tool>,
        call_id: &str,
        args: Value,
        progress: Progress,
        artifacts: &mut Vec<ArtifactRef>,
    ) -> (String, bool) {
        let timeout = tool.timeout().unwrap_or(self.default_timeout);
        let slot = self.slots.acquire().await;
        let span = tool_span(tool.as_ref(), call_id, &args);
        let result = span
            .scope(run_tool(tool.clone(), args, timeout, progress))
            .await;
        drop(slot);
        let (observation, error) = match result {
            Ok(output) => (self.observe(output, artifacts).await, false),
            Err(message) => (format!("Error: {message}"), true),
        };
        span.end(&observation, error);
        (observation, error)
    }

    /// The LLM-visible observation: artifacts are stored and replaced by the fixed notice.
    async fn observe(&self, output: ToolOutput, refs: &mut Vec<ArtifactRef>) -> String {
        if output.artifacts.is_empty() {
            return output.content;
        }
        let mut notices = Vec::new();
        for a in output.artifacts {
            let name = a.name.clone();
            match self.artifacts.store(&self.run_id, a).await {
                Ok(r) => {
                    refs.push(r);
                    notices.push(prompts::artifact_notice(&name));
                }
                Err(e) => {
                    notices.push(format!("Error: artifact '{name}' could not be stored: {e}"))
                }
            }
        }
        notices.join("\n")
    }
}

/// The error observation of a call whose arguments cannot be used: cut for being too large
/// (`kept` is what was kept), or not valid JSON (`kept` is the raw text).
fn unusable_arguments(tool: &str, kept: &str) -> (String, bool) {
    let observation = match kept.starts_with(prompts::ARGUMENTS_OMITTED) {
        true => prompts::arguments_too_large(tool, kept),
        false => format!(
            "Error: the arguments for '{tool}' are not valid JSON ({}). Send a JSON object.",
            truncate_chars(kept, 200)
        ),
    };
    (observation, true)
}

/// The call's `execute_tool` span (arguments on it only with content capture on).
fn tool_span(tool: &dyn crate::tools::Tool, call_id: &str, args: &Value) -> ToolSpan {
    let arguments = telemetry::capture_content().then(|| args.to_string());
    ToolSpan::start(
        tool.name(),
        call_id,
        tool.description(),
        arguments.as_deref(),
    )
}

/// Runs the tool in its own task: a panic becomes an error, the timeout aborts it.
async fn run_tool(
    tool: Arc<dyn crate::tools::Tool>,
    args: Value,
    timeout: Duration,
    progress: Progress,
) -> Result<ToolOutput, String> {
    let name = tool.name().to_string();
    let call = async move { tool.call_reporting(args, progress).await };
    // The tool's own task runs in the call's span, so an HTTP tool's request carries it.
    let task = match telemetry::enabled() {
        true => tokio::spawn(call.with_context(Context::current())),
        false => tokio::spawn(call),
    };
    let mut task = AbortOnDrop(task);
    match tokio::time::timeout(timeout, &mut task.0).await {
        Err(_) => Err(format!(
            "tool '{name}' timed out after {} s",
            timeout.as_secs_f64()
        )),
        Ok(Err(join)) if join.is_panic() => Err(format!(
            "tool '{name}' crashed: {}",
            panic_message(join.into_panic())
        )),
        Ok(Err(_)) => Err(format!("tool '{name}' was aborted")),
        Ok(Ok(Err(ToolError::Failed(m)))) => Err(m),
        Ok(Ok(Err(e))) => Err(e.to_string()),
        Ok(Ok(Ok(out))) => Ok(out),
    }
}

mod batch;
pub use batch::Batch;
