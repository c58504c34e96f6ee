//! Engine safeguards with a scripted LLM (issue "ReAct engine", tests 9–15): tool selection,
//! self-reflection, cycle detection, the completion checklist, hooks as the LLM sees them, the
//! context guard and interrupts.
//!
//! By topic: [`checklist`], [`context`], [`hooks`], [`interrupts`], [`notes`] (the `safeguard`
//! events), [`reflection`], [`repeats`] (small models' repeated calls), [`caller_cycles`] (a
//! caller tool asked for again and again, across continuations), [`selection`].

mod caller_cycles;
mod checklist;
mod context;
mod hooks;
mod interrupts;
mod notes;
mod reflection;
mod repeats;
mod selection;
mod small_models;

use std::sync::Arc;
use std::time::Duration;

use crate::support::engine::*;
use crate::support::tools::{registry, FakeTool};
use async_trait::async_trait;
use reagent::agent::events::{AgentEvent, StepEvent};
use reagent::agent::hooks::{
    Hook, HookContext, HookEntry, HookError, HookRunner, PostContext, PostVerdict, PreVerdict,
};
use reagent::agent::{AgentConfig, RunStatus};
use reagent::llm::{LlmError, Message, Role};
use reagent::testing::{ScriptedLlm, Turn};
use reagent::tools::Tool;
use serde_json::json;
