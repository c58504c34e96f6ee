//! Samples of every `step` type and of run outcomes, serialised by the tests against the
//! documented schemas.

use serde_json::json;
use uuid::Uuid;

use crate::agent::caller_tools::{CallerCall, RequiredAction};
use crate::agent::events::StepEvent;
use crate::agent::{Interrupt, Mode, RunOutcome, RunStatus};
use crate::domain::ArtifactRef;

/// The `step.type` of each variant; no wildcard, so a new variant fails to compile here until
/// `events::steps` describes it and [`steps`] has a sample of it.
pub(super) fn step_type(step: &StepEvent) -> &'static str {
    match step {
        StepEvent::Thinking { .. } => "thinking",
        StepEvent::ToolStart { .. } => "tool_start",
        StepEvent::ToolEnd { .. } => "tool_end",
        StepEvent::ToolProgress { .. } => "tool_progress",
        StepEvent::Selection { .. } => "selection",
        StepEvent::Interrupt { .. } => "interrupt",
        StepEvent::ApprovalRequired { .. } => "approval_required",
        StepEvent::Resumed { .. } => "resumed",
        StepEvent::Plan { .. } => "plan",
        StepEvent::DagStep { .. } => "dag_step",
        StepEvent::Analysis { .. } => "analysis",
        StepEvent::Replan { .. } => "replan",
        StepEvent::Limit { .. } => "limit",
        StepEvent::CallerToolCalls { .. } => "client_tool_calls",
        StepEvent::Safeguard { .. } => "safeguard",
    }
}

/// A sample of every step type: the tool loop's, then the DAG engine's and the run's course.
pub(super) fn steps() -> Vec<StepEvent> {
    let mut all = loop_steps();
    all.extend(course_steps());
    all
}

fn loop_steps() -> Vec<StepEvent> {
    let artifact = ArtifactRef {
        id: "a".into(),
        name: "r.html".into(),
        mime_type: "text/html".into(),
        size: 3,
        url: "/api/artifacts/a".into(),
    };
    vec![
        StepEvent::Thinking {
            iteration: 1,
            reasoning: String::new(),
            dag_step: Some("A".into()),
        },
        StepEvent::ToolStart {
            iteration: 1,
            call_id: "c1".into(),
            tool: "calculator".into(),
            arguments: json!({"expression": "1+1"}),
            dag_step: None,
        },
        StepEvent::ToolEnd {
            iteration: 1,
            call_id: "c1".into(),
            tool: "calculator".into(),
            observation: "2".into(),
            error: false,
            blocked: false,
            duration_ms: 3,
            artifacts: vec![artifact],
            dag_step: Some("A".into()),
        },
        StepEvent::ToolProgress {
            iteration: 1,
            call_id: "c1".into(),
            tool: "travel".into(),
            message: "looking up flights".into(),
            dag_step: Some("A".into()),
        },
        StepEvent::Selection {
            iteration: 0,
            total_tools: 9,
            selected: vec!["calculator".into()],
            fallback: false,
        },
        StepEvent::Interrupt {
            iteration: 2,
            ids: vec![Uuid::new_v4().to_string()],
            contents: vec!["and then?".into()],
        },
        StepEvent::ApprovalRequired {
            iteration: 2,
            approval_id: Uuid::new_v4().to_string(),
            tool: "deploy".into(),
            arguments: json!({}),
            dag_step: None,
        },
    ]
}

fn course_steps() -> Vec<StepEvent> {
    vec![
        StepEvent::Plan {
            round: 1,
            steps: vec![crate::agent::events::PlanStepView {
                id: "A".into(),
                task: "look it up".into(),
                dependencies: vec![],
                tool_hint: Some("calculator".into()),
                model_hint: None,
                model: "mock".into(),
            }],
        },
        StepEvent::DagStep {
            round: 1,
            step_id: "A".into(),
            status: crate::agent::events::DagStatus::Completed,
            model: "mock".into(),
            result: Some("2".into()),
            error: None,
            duration_ms: Some(4),
        },
        StepEvent::Analysis {
            round: 1,
            achieved: false,
            confidence: 0.4,
            reasoning: "half done".into(),
        },
        StepEvent::Replan {
            round: 2,
            reason: "half done".into(),
        },
        StepEvent::Resumed {
            iteration: 3,
            instance: "node-a".into(),
        },
        StepEvent::Limit {
            iteration: 2,
            limit: crate::agent::events::ToolLimit::ToolCallsPerReply,
            max: 32,
            skipped: 9968,
            dag_step: Some("A".into()),
        },
        StepEvent::Safeguard {
            iteration: 4,
            kind: crate::agent::events::SafeguardKind::CycleWarning,
            tool: Some("calculator".into()),
            dag_step: Some("A".into()),
        },
        StepEvent::CallerToolCalls {
            iteration: 1,
            calls: vec![CallerCall {
                call_id: "c2".into(),
                name: "confirm".into(),
                arguments: "{\"question\":\"ok?\"}".into(),
            }],
        },
    ]
}

pub(super) fn outcomes() -> Vec<RunOutcome> {
    let failed = RunOutcome::failed(Mode::Json, "The model could not be reached.", "timeout");
    let chained = RunOutcome {
        status: RunStatus::Completed,
        unprocessed_interrupts: vec![Interrupt {
            id: Uuid::new_v4(),
            content: "late".into(),
        }],
        next_run_id: Some(Uuid::new_v4().to_string()),
        error: None,
        synthesis: true,
        ..failed.clone()
    };
    let dag = RunOutcome {
        dag: Some(crate::agent::events::DagSummary {
            engine: crate::domain::Engine::Dag,
            rounds: 2,
            achieved: true,
            confidence: 0.9,
        }),
        trace_id: Some("4bf92f3577b34da6a3ce929d0e0e4736".into()),
        trace_url: Some("http://phoenix:6006/t/4bf92f3577b34da6a3ce929d0e0e4736".into()),
        ..chained.clone()
    };
    let paused = RunOutcome {
        status: RunStatus::RequiresAction,
        answer: String::new(),
        error: None,
        required_action: Some(RequiredAction {
            tool_calls: vec![CallerCall {
                call_id: "c2".into(),
                name: "confirm".into(),
                arguments: "{}".into(),
            }],
        }),
        ..failed.clone()
    };
    vec![failed, chained, dag, paused]
}
