//! The planner: one structured call with the goal, the conversation history, the tool
//! catalog and the model roles; an invalid plan gets one re-plan with its validation error in the
//! prompt, then the run falls back to a one-step plan whose task is the query. A reply that
//! cannot be read as a plan at all (every level of the structured call failed) goes straight to
//! the fallback: the structured call has already retried.

use tokio_util::sync::CancellationToken;

use super::plan::{self, Plan, PlanError};
use super::prompts::{PLANNER_SYSTEM, REPLAN_NOTE};
use crate::agent::synthesis::truncate_chars;
use crate::llm::{structured_llm_call, Llm, Message, StructuredCall, Usage};
use crate::telemetry::{with_call_kind, CallKind};
use crate::tools::ToolRegistry;

/// Characters of a tool description the planner sees.
const TOOL_DESCRIPTION_CHARS: usize = 120;

/// What the planner reads.
pub struct PlanRequest<'a> {
    pub goal: &'a str,
    pub history: &'a [Message],
    pub tools: &'a ToolRegistry,
    pub roles: &'a [String],
    /// The previous rounds and their analysis, when re-planning.
    pub replan_context: Option<&'a str>,
    pub max_steps: usize,
}

/// A plan ready to run and what it cost.
pub struct Planned {
    pub plan: Plan,
    pub usage: Usage,
    /// The one-step fallback, and why.
    pub fallback: Option<String>,
}

/// Plans, re-plans once on an invalid plan, else falls back. `None` when cancelled.
pub async fn make_plan(
    llm: &dyn Llm,
    req: &PlanRequest<'_>,
    cancel: &CancellationToken,
) -> Option<Planned> {
    let mut usage = Usage::default();
    let mut error: Option<PlanError> = None;
    let max_steps = req.max_steps;
    for _attempt in 0..2 {
        let messages = prompt(req, error.as_ref());
        let call = StructuredCall {
            messages,
            schema_name: "create_plan".into(),
            schema: plan::schema(req.max_steps),
            parse_fn: Box::new(move |v| plan::parse_at_most(v, max_steps.saturating_add(1))),
            default_value: None,
            regex_fallback: None,
        };
        let reply = tokio::select! {
            _ = cancel.cancelled() => return None,
            r = with_call_kind(CallKind::Planner, structured_llm_call(llm, call)) => r,
        };
        let p = match reply {
            Ok(r) => {
                usage += r.usage;
                r.value
            }
            Err(crate::llm::StructuredError::Exhausted {
                usage: u,
                last_error,
                ..
            }) => {
                usage += u;
                return Some(fallback(
                    req,
                    usage,
                    format!("no usable plan: {last_error}"),
                ));
            }
        };
        match plan::validate(&p, req.max_steps) {
            Ok(()) => {
                return Some(Planned {
                    plan: p,
                    usage,
                    fallback: None,
                })
            }
            Err(e) => {
                tracing::info!(error = %e, "invalid plan");
                error = Some(e);
            }
        }
    }
    let why = error.map(|e| e.to_string()).unwrap_or_default();
    Some(fallback(req, usage, format!("invalid plan twice: {why}")))
}

fn fallback(req: &PlanRequest<'_>, usage: Usage, why: String) -> Planned {
    tracing::warn!(reason = %why, "planning failed; running the query as one step");
    Planned {
        plan: plan::single_step(req.goal),
        usage,
        fallback: Some(why),
    }
}

/// The planner's messages; `error` is the previous attempt's validation error.
fn prompt(req: &PlanRequest<'_>, error: Option<&PlanError>) -> Vec<Message> {
    let mut user = format!("Goal:\n{}\n", req.goal);
    if !req.history.is_empty() {
        user.push_str("\nConversation so far:\n");
        for m in req.history {
            let who = match m.role {
                crate::llm::Role::Assistant => "Assistant",
                _ => "User",
            };
            user.push_str(&format!("{who}: {}\n", truncate_chars(&m.content, 2000)));
        }
    }
    user.push_str("\nTools:\n");
    if req.tools.is_empty() {
        user.push_str("(none)\n");
    }
    for t in req.tools.iter() {
        let d = t.description();
        let line = d.lines().next().unwrap_or_default();
        user.push_str(&format!(
            "- {}: {}\n",
            t.name(),
            truncate_chars(line, TOOL_DESCRIPTION_CHARS)
        ));
    }
    user.push_str("\nModel roles for model_hint: ");
    if req.roles.is_empty() {
        user.push_str("(none: leave model_hint null)\n");
    } else {
        user.push_str(&format!("{}\n", req.roles.join(", ")));
    }
    user.push_str(&format!("\nAt most {} steps.\n", req.max_steps));
    if let Some(ctx) = req.replan_context {
        user.push_str(&format!("\n{ctx}\n{REPLAN_NOTE}\n"));
    }
    if let Some(e) = error {
        user.push_str(&format!(
            "\nYour previous plan was invalid: {e}. Return a corrected plan.\n"
        ));
    }
    vec![Message::system(PLANNER_SYSTEM), Message::user(user)]
}
