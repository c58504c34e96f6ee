//! `FakeTool`: the one fake tool of the suites, configured per test — a fixed text or a text
//! computed from the arguments, an error, a panic, a hang, a wait on a [`Gate`], after an
//! optional delay, with artifacts, its own timeout, `writes` or `requires_approval`. It records
//! the arguments it received, counts its calls and the calls dropped before they returned (a
//! timed-out or cancelled call that was really stopped).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use reagent::tools::{Artifact, Tool, ToolError, ToolOutput, ToolRegistry};
use serde_json::{json, Value};
use tokio::sync::Notify;

/// Blocks a [`FakeTool::gated`] call until the test calls [`Gate::release`], so "during a
/// tool" is a state of the test, not a timing guess.
#[derive(Default)]
pub struct Gate {
    release: Notify,
}

impl Gate {
    pub fn release(&self) {
        self.release.notify_one();
    }
}

/// What a call does after its delay.
enum Reply {
    Text(String),
    With(Box<dyn Fn(&Value) -> String + Send + Sync>),
    Fail(String),
    Panic,
    Hang,
    Gated(Arc<Gate>, String),
}

pub struct FakeTool {
    name: String,
    description: String,
    parameters: Value,
    reply: Reply,
    delay: Duration,
    timeout: Option<Duration>,
    writes: bool,
    approval: bool,
    idempotent: bool,
    artifacts: Vec<Artifact>,
    seen: Mutex<Vec<Value>>,
    calls: AtomicUsize,
    dropped: Arc<AtomicUsize>,
}

impl FakeTool {
    fn build(name: &str, reply: Reply) -> Self {
        Self {
            name: name.into(),
            description: "A test tool that returns a fixed result.".into(),
            parameters: json!({"type": "object", "properties": {"x": {"type": "string"}}}),
            reply,
            delay: Duration::ZERO,
            timeout: None,
            writes: false,
            approval: false,
            idempotent: false,
            artifacts: Vec::new(),
            seen: Mutex::new(Vec::new()),
            calls: AtomicUsize::new(0),
            dropped: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// Answers `result`.
    pub fn text(name: &str, result: &str) -> Self {
        Self::build(name, Reply::Text(result.into()))
    }
    /// Answers what `f` makes of the arguments (it may also act, e.g. count or interrupt).
    pub fn with(name: &str, f: impl Fn(&Value) -> String + Send + Sync + 'static) -> Self {
        Self::build(name, Reply::With(Box::new(f)))
    }
    /// Answers `echo: <args>`.
    pub fn echo(name: &str) -> Self {
        Self::with(name, |args| format!("echo: {args}"))
            .describe("Echoes its arguments")
            .params(json!({"type": "object", "properties": {"text": {"type": "string"}}}))
    }
    /// Fails with `ToolError::Failed(message)`.
    pub fn failing(name: &str, message: &str) -> Self {
        Self::build(name, Reply::Fail(message.into()))
    }
    /// Panics.
    pub fn panicking(name: &str) -> Self {
        Self::build(name, Reply::Panic)
    }
    /// Never returns.
    pub fn hanging(name: &str) -> Self {
        Self::build(name, Reply::Hang)
    }
    /// Waits for `gate`, then answers `result`.
    pub fn gated(name: &str, gate: Arc<Gate>, result: &str) -> Self {
        Self::build(name, Reply::Gated(gate, result.into()))
    }

    pub fn describe(mut self, description: &str) -> Self {
        self.description = description.into();
        self
    }
    pub fn params(mut self, parameters: Value) -> Self {
        self.parameters = parameters;
        self
    }
    pub fn delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }
    /// The tool's own timeout (`Tool::timeout`).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }
    pub fn writes(mut self) -> Self {
        self.writes = true;
        self
    }
    /// Needs a reviewer's approval (docs/api.md).
    /// Safe to repeat: run again when a resumed run finds it in flight (docs/deployment.md).
    pub fn idempotent(mut self) -> Self {
        self.idempotent = true;
        self
    }
    pub fn approval(mut self) -> Self {
        self.approval = true;
        self
    }
    pub fn artifact(mut self, name: &str, mime_type: &str, data: &[u8]) -> Self {
        self.artifacts.push(Artifact {
            name: name.into(),
            mime_type: mime_type.into(),
            data: data.to_vec(),
        });
        self
    }
    pub fn arc(self) -> Arc<Self> {
        Arc::new(self)
    }

    /// Shorthand: `text(name, result)`, shared.
    pub fn new(name: &str, result: &str) -> Arc<Self> {
        Self::text(name, result).arc()
    }
    /// Shorthand: `text(name, result)` answering after `delay`, shared.
    pub fn slow(name: &str, result: &str, delay: Duration) -> Arc<Self> {
        Self::text(name, result).delay(delay).arc()
    }

    /// The arguments of every call so far.
    pub fn seen(&self) -> Vec<Value> {
        self.seen.lock().unwrap().clone()
    }
    /// Calls started so far.
    pub fn call_count(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
    /// Calls dropped before they returned (aborted by a timeout or a cancel).
    pub fn dropped(&self) -> usize {
        self.dropped.load(Ordering::SeqCst)
    }
}

/// Counts a call as dropped unless it completed.
struct DropGuard(Arc<AtomicUsize>, bool);

impl Drop for DropGuard {
    fn drop(&mut self) {
        if !self.1 {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
}

#[async_trait]
impl Tool for FakeTool {
    fn name(&self) -> &str {
        &self.name
    }
    fn description(&self) -> &str {
        &self.description
    }
    fn parameters(&self) -> Value {
        self.parameters.clone()
    }
    fn writes(&self) -> bool {
        self.writes
    }
    fn requires_approval(&self) -> bool {
        self.approval
    }
    fn timeout(&self) -> Option<Duration> {
        self.timeout
    }
    fn idempotent(&self) -> bool {
        self.idempotent
    }
    async fn call(&self, args: Value) -> Result<ToolOutput, ToolError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.seen.lock().unwrap().push(args.clone());
        let mut guard = DropGuard(self.dropped.clone(), false);
        if !self.delay.is_zero() {
            tokio::time::sleep(self.delay).await;
        }
        let content = match &self.reply {
            Reply::Text(text) => text.clone(),
            Reply::With(f) => f(&args),
            Reply::Fail(message) => {
                guard.1 = true;
                return Err(ToolError::Failed(message.clone()));
            }
            Reply::Panic => {
                guard.1 = true;
                panic!("tool exploded")
            }
            Reply::Hang => std::future::pending().await,
            Reply::Gated(gate, text) => {
                gate.release.notified().await;
                text.clone()
            }
        };
        guard.1 = true;
        Ok(ToolOutput {
            content,
            artifacts: self.artifacts.clone(),
        })
    }
}

/// A registry holding `tools`.
pub fn registry(tools: Vec<Arc<dyn Tool>>) -> ToolRegistry {
    let mut r = ToolRegistry::new();
    for t in tools {
        r.register(t);
    }
    r
}

/// `deploy`: needs a reviewer's approval (docs/api.md) and answers `deployed to <env>`; its
/// [`FakeTool::call_count`] tells "ran" from "blocked".
pub fn deploy() -> Arc<FakeTool> {
    FakeTool::with("deploy", |args| format!("deployed to {}", args["env"]))
        .describe("Deploys to an environment")
        .params(json!({"type": "object", "properties": {"env": {"type": "string"}}}))
        .approval()
        .arc()
}
