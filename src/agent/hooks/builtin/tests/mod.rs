use super::*;
use crate::agent::events::{AgentEvent, StepEvent};
use crate::agent::hooks::approval::ApprovalBroker;
use crate::agent::hooks::config::{build_hooks, HookConfigError, HookDeps};
use crate::agent::hooks::{
    FailurePolicy, HookEntry, HookRunner, HookSpec, PostOutcome, PreOutcome,
};
use crate::config::plan_hooks;
use serde_json::json;

mod builtins;
mod config;
mod runner;

type Log = Arc<Mutex<Vec<&'static str>>>;

/// What a probe hook does in both phases.
#[derive(Clone)]
enum Act {
    Allow,
    Block(&'static str),
    /// Pre: appends its tag to `arguments.tags`; Post: appends `+tag` to the observation.
    Tag(&'static str),
    Fail,
    Hang,
}

struct Probe {
    name: &'static str,
    act: Act,
    log: Log,
}

#[async_trait]
impl Hook for Probe {
    fn name(&self) -> &str {
        self.name
    }
    async fn pre_tool_use(&self, ctx: &HookContext) -> Result<PreVerdict, HookError> {
        self.log.lock().unwrap().push(self.name);
        match self.act {
            Act::Allow => Ok(PreVerdict::Allow),
            Act::Block(r) => Ok(PreVerdict::Block(r.into())),
            Act::Tag(t) => {
                let mut args = ctx.arguments.clone();
                let mut tags = args["tags"].as_array().cloned().unwrap_or_default();
                tags.push(json!(t));
                args["tags"] = Value::Array(tags);
                Ok(PreVerdict::Rewrite(args))
            }
            Act::Fail => Err(HookError::Failed("boom".into())),
            Act::Hang => std::future::pending().await,
        }
    }
    async fn post_tool_use(&self, ctx: &PostContext) -> Result<PostVerdict, HookError> {
        self.log.lock().unwrap().push(self.name);
        match self.act {
            Act::Allow | Act::Block(_) => Ok(PostVerdict::Keep),
            Act::Tag(t) => Ok(PostVerdict::Rewrite(format!("{}+{t}", ctx.observation))),
            Act::Fail => Err(HookError::Failed("boom".into())),
            Act::Hang => std::future::pending().await,
        }
    }
}

fn probe(log: &Log, name: &'static str, act: Act) -> HookEntry {
    HookEntry::new(Arc::new(Probe {
        name,
        act,
        log: Arc::clone(log),
    }))
}

fn ctx(tool: &str) -> HookContext {
    HookContext {
        run_id: "run-1".into(),
        conversation_id: "conv-1".into(),
        iteration: 1,
        call_id: "call-1".into(),
        tool: tool.into(),
        arguments: json!({"q": 1}),
        tool_writes: false,
        requires_approval: false,
        events: None,
    }
}

fn post(tool: &str, observation: &str) -> PostContext {
    PostContext {
        call: ctx(tool),
        observation: observation.into(),
        error: false,
        blocked: false,
        duration_ms: 7,
    }
}

fn taken(log: &Log) -> Vec<&'static str> {
    std::mem::take(&mut *log.lock().unwrap())
}
