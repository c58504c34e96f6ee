//! Engine behaviour through `ReActAgent::run` with a scripted LLM (issue "ReAct engine", tests
//! 1–8 and 16–19). Each test checks what the LLM was sent and what the run emitted.
//!
//! By topic: [`answer_path`], [`answer_stops`], [`endings`], [`iterations`], [`json_calls`], [`json_mode`], [`limits`], [`messages`],
//! [`synthesis`].

mod answer_path;
mod answer_stops;
mod endings;
mod iterations;
mod json_calls;
mod json_mode;
mod limits;
mod messages;
mod synthesis;

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::support::engine::*;
use crate::support::tools::{registry, FakeTool};
use reagent::agent::events::{AgentEvent, AnswerEvent, StepEvent};
use reagent::agent::hooks::HookRunner;
use reagent::agent::{AgentConfig, Mode, RunStatus};
use reagent::llm::{ChatResponse, LlmError, ResponseFormat, Role, ToolChoice, Usage};
use reagent::testing::scripted::response;
use reagent::testing::{CallKind, ScriptedLlm, Turn};
use serde_json::json;

#[allow(dead_code)]
fn _unused(_: ChatResponse) {}
