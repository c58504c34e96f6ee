//! The `step` event's schemas by `type` (docs/api.md): the tool loop's, a tool call's three
//! steps, the DAG engine's and the run's course, on the field helpers of the parent module.

use serde_json::{json, Value};

use super::{
    boolean, dag_tag, integer, nullable_string, number, object, req, schema_ref, string, strings,
    Field,
};

/// `step` events by `type` (docs/api.md), each with its other fields.
pub(super) fn steps() -> Vec<(&'static str, &'static str, Vec<Field>)> {
    let iteration = || req("iteration", integer());
    [(
        "thinking",
        "The model chose actions (`reasoning` may be empty)",
        vec![iteration(), req("reasoning", string()), dag_tag()],
    )]
    .into_iter()
    .chain(tool_steps())
    .chain([
        (
            "selection",
            "The tools offered to the model this run",
            vec![
                iteration(),
                req("total_tools", integer()),
                req("selected", strings()),
                req("fallback", boolean()),
            ],
        ),
        (
            "interrupt",
            "Follow-ups drained into the loop",
            vec![
                iteration(),
                req("ids", strings()),
                req("contents", strings()),
            ],
        ),
        (
            "approval_required",
            "A tool call waits for `POST /api/approvals/{approval_id}`",
            vec![
                iteration(),
                req("approval_id", string()),
                req("tool", string()),
                req("arguments", json!({})),
                dag_tag(),
            ],
        ),
    ])
    .chain(dag_steps())
    .chain(course_steps())
    .collect()
}

/// A tool call's `step` events: its start, what it reports while running, its end.
fn tool_steps() -> Vec<(&'static str, &'static str, Vec<Field>)> {
    let iteration = || req("iteration", integer());
    vec![
        (
            "tool_start",
            "A tool call begins",
            vec![
                iteration(),
                req("call_id", string()),
                req("tool", string()),
                req("arguments", json!({})),
                dag_tag(),
            ],
        ),
        (
            "tool_end",
            "A tool call ended; `observation` as the model saw it, cut to 4000 characters",
            vec![
                iteration(),
                req("call_id", string()),
                req("tool", string()),
                req("observation", string()),
                req("error", boolean()),
                req("blocked", boolean()),
                req("duration_ms", integer()),
                req(
                    "artifacts",
                    json!({"type": "array", "items": schema_ref("ArtifactRef")}),
                ),
                dag_tag(),
            ],
        ),
        (
            "tool_progress",
            "A running tool reported what it is doing (a remote A2A agent's status update)",
            vec![
                iteration(),
                req("call_id", string()),
                req("tool", string()),
                req("message", string()),
                dag_tag(),
            ],
        ),
    ]
}

/// DAG mode's `step` events.
fn dag_steps() -> Vec<(&'static str, &'static str, Vec<Field>)> {
    let round = || req("round", integer());
    let plan_step = object(
        "A planned step; `model` is the registry name it runs on",
        vec![
            req("id", string()),
            req("task", string()),
            req("dependencies", strings()),
            req("tool_hint", nullable_string()),
            req("model_hint", nullable_string()),
            req("model", string()),
        ],
    );
    let status = json!({"type": "string",
        "enum": ["queued", "running", "completed", "failed", "skipped"]});
    vec![
        (
            "plan",
            "A round's plan",
            vec![
                round(),
                req("steps", json!({"type": "array", "items": plan_step})),
            ],
        ),
        (
            "dag_step",
            "A plan step changed status",
            vec![
                round(),
                req("step_id", string()),
                req("status", status),
                req("model", string()),
                ("result", string(), false),
                ("error", string(), false),
                ("duration_ms", integer(), false),
            ],
        ),
        (
            "analysis",
            "The analyser's verdict on a round",
            vec![
                round(),
                req("achieved", boolean()),
                req("confidence", number()),
                req("reasoning", string()),
            ],
        ),
        (
            "replan",
            "A new round (`round`) is planned, and why",
            vec![round(), req("reason", string())],
        ),
    ]
}

/// The `step` events of the loop's guards and the run's course: resumed after a restart, a
/// tool-call limit, a safeguard, the caller's tools called.
fn course_steps() -> Vec<(&'static str, &'static str, Vec<Field>)> {
    vec![
        (
            "resumed",
            "The run goes on after a restart from its last checkpoint (docs/deployment.md)",
            vec![req("iteration", integer()), req("instance", string())],
        ),
        (
            "limit",
            "A tool-call limit took effect: `tool_calls_per_reply` (the reply's calls past `max` \
             were not run, `skipped` of them) or `tool_calls_per_run` (no more tool calls; the \
             answer is written from what the run has)",
            vec![
                req("iteration", integer()),
                req(
                    "limit",
                    json!({"type": "string", "enum": ["tool_calls_per_reply", "tool_calls_per_run"]}),
                ),
                req("max", integer()),
                req("skipped", integer()),
                dag_tag(),
            ],
        ),
        (
            "safeguard",
            "A safeguard of the tool loop acted: self-reflection or the repeated-call warning \
             (`tool`) was appended, the completion checklist was asked for, or the iteration \
             cap ended the loop; what it told the model stays internal",
            vec![
                req("iteration", integer()),
                req(
                    "kind",
                    json!({"type": "string",
                        "enum": ["reflection", "cycle_warning", "completion_check", "max_iterations", "cycle_stop"]}),
                ),
                ("tool", string(), false),
                dag_tag(),
            ],
        ),
        (
            "client_tool_calls",
            "The model called caller tools (`client_tools`): the run ends `requires_action` \
             with these calls; answer them with `POST /api/runs/{run_id}/tool_outputs`",
            vec![req("iteration", integer()), req("calls", caller_calls())],
        ),
    ]
}

/// Calls of caller tools, as `client_tool_calls` and `done.required_action` list them.
pub(super) fn caller_calls() -> Value {
    let call = object(
        "A caller tool call; `arguments` is the JSON text the model wrote",
        vec![
            req("call_id", string()),
            req("name", string()),
            req("arguments", string()),
        ],
    );
    json!({"type": "array", "items": call})
}

/// The documented `step.type` values, in order.
#[cfg(test)]
pub fn step_types() -> Vec<&'static str> {
    steps().into_iter().map(|s| s.0).collect()
}
