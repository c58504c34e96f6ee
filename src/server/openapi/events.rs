//! The SSE event payloads of docs/api.md as OpenAPI component schemas, written once in the tables
//! below: each `event:` name has a schema (`StartEvent`, `StepEvent`, …), `step` and `answer`
//! are one of their tagged variants. OpenAPI cannot type the events of a `text/event-stream`
//! body, so every such response lists them in an `x-sse-events` extension (event name → schema)
//! and its description. The tests check real [`crate::agent::AgentEvent`]s against these schemas,
//! so a new event or field fails there until it is described here.

use serde_json::{json, Map, Value};

/// One field: its name, its schema, and whether every event has it.
type Field = (&'static str, Value, bool);

fn string() -> Value {
    json!({"type": "string"})
}
fn integer() -> Value {
    json!({"type": "integer", "minimum": 0})
}
fn boolean() -> Value {
    json!({"type": "boolean"})
}
fn number() -> Value {
    json!({"type": "number", "minimum": 0, "maximum": 1})
}
fn nullable_string() -> Value {
    json!({"type": ["string", "null"]})
}
/// The DAG step a ReAct event belongs to; absent in a ReAct run.
fn dag_tag() -> Field {
    ("dag_step", string(), false)
}
fn strings() -> Value {
    json!({"type": "array", "items": {"type": "string"}})
}
fn schema_ref(name: &str) -> Value {
    json!({"$ref": format!("#/components/schemas/{name}")})
}
fn req(name: &'static str, schema: Value) -> Field {
    (name, schema, true)
}

/// An object with these fields.
fn object(description: &str, fields: Vec<Field>) -> Value {
    let required: Vec<&str> = fields.iter().filter(|f| f.2).map(|f| f.0).collect();
    let properties: Map<String, Value> = fields
        .into_iter()
        .map(|(name, schema, _)| (name.to_string(), schema))
        .collect();
    json!({"type": "object", "description": description, "required": required,
           "properties": properties})
}

/// `step` events by `type` (docs/api.md), each with its other fields.
fn steps() -> Vec<(&'static str, &'static str, Vec<Field>)> {
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
fn caller_calls() -> Value {
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

/// `answer` events by `status`.
fn answers() -> Vec<(&'static str, &'static str, Vec<Field>)> {
    let source = json!({"type": "string", "enum": ["reply", "synthesis", "results"],
        "description": "Where the answer comes from: the model's own reply (streamed as it is \
            written), a synthesis call, or the tool results; absent on a text that explains a \
            failure or a stop"});
    vec![
        (
            "start",
            "An answer begins (again after a `reset`)",
            vec![("source", source, false)],
        ),
        (
            "delta",
            "More of the answer",
            vec![req("content", string())],
        ),
        (
            "reset",
            "Discard the deltas so far (a tool call came after the text, or another answer replaces it)",
            vec![],
        ),
        (
            "done",
            "The whole answer; `fallback` when it is not the model's own answer (it explains a failure or a stop, or was built from the tool results)",
            vec![req("content", string()), req("fallback", boolean())],
        ),
    ]
}

/// A tagged union: one object per variant, `tag` fixed to the variant's name.
fn tagged(
    description: &str,
    tag: &'static str,
    variants: Vec<(&'static str, &'static str, Vec<Field>)>,
) -> Value {
    let one_of: Vec<Value> = variants
        .into_iter()
        .map(|(name, what, mut fields)| {
            fields.insert(0, req(tag, json!({"type": "string", "const": name})));
            object(what, fields)
        })
        .collect();
    json!({"description": description, "oneOf": one_of})
}

fn done() -> Value {
    let mut usage: Vec<Field> = [
        "prompt_tokens",
        "completion_tokens",
        "total_tokens",
        "llm_calls",
        "cache_read_tokens",
        "cache_write_tokens",
        "unpriced_calls",
        "estimated_calls",
    ]
    .into_iter()
    .map(|name| req(name, integer()))
    .collect();
    // USD of the priced calls (docs/configuration.md `price`).
    usage.push(req("cost_usd", json!({"type": "number", "minimum": 0})));
    let interrupt = object(
        "An accepted follow-up",
        vec![req("id", string()), req("content", string())],
    );
    object(
        "Last event of every run",
        vec![
            req("status", schema_ref("RunStatus")),
            req("iterations", integer()),
            req("tool_calls", integer()),
            req("usage", object("Token accounting", usage)),
            req("elapsed_ms", integer()),
            req("mode", schema_ref("Mode")),
            req("answer", string()),
            (
                "synthesis",
                json!({"type": "boolean", "description": "Whether a synthesis call ran"}),
                true,
            ),
            ("error", string(), false),
            req(
                "unprocessed_interrupts",
                json!({"type": "array", "items": interrupt}),
            ),
            ("next_run_id", string(), false),
            ("engine", schema_ref("Engine"), false),
            ("rounds", integer(), false),
            ("achieved", boolean(), false),
            ("confidence", number(), false),
            (
                "required_action",
                object(
                    "`requires_action` only: the caller tool calls the run waits for",
                    vec![req("tool_calls", caller_calls())],
                ),
                false,
            ),
            ("trace_id", trace_id(), false),
            ("trace_url", string(), false),
        ],
    )
}

/// The run's OpenTelemetry trace id, present while tracing is on.
fn trace_id() -> Value {
    json!({"type": "string", "pattern": "^[0-9a-f]{32}$",
        "description": "The run's OpenTelemetry trace id (present while tracing is on)"})
}

/// The SSE event names in stream order with their schema names and schemas.
pub fn events() -> Vec<(&'static str, &'static str, Value)> {
    vec![
        (
            "start",
            "StartEvent",
            object(
                "First event of every run",
                vec![
                    req("run_id", string()),
                    req("conversation_id", string()),
                    req("model", string()),
                    req("mode", schema_ref("Mode")),
                    req("engine", schema_ref("Engine")),
                    (
                        "continues",
                        json!({"type": "string", "description": "The `requires_action` run this continuation goes on from"}),
                        false,
                    ),
                    ("trace_id", trace_id(), false),
                ],
            ),
        ),
        (
            "step",
            "StepEvent",
            tagged("Tool-loop progress", "type", steps()),
        ),
        (
            "compact",
            "CompactEvent",
            object(
                "The context was compacted",
                vec![
                    req("messages_before", integer()),
                    req("messages_after", integer()),
                    req("tokens_before", integer()),
                    req("tokens_after", integer()),
                    req("summary", string()),
                    dag_tag(),
                ],
            ),
        ),
        (
            "answer",
            "AnswerEvent",
            tagged("The answer as it is written", "status", answers()),
        ),
        ("done", "DoneEvent", done()),
    ]
}

/// Schemas the events refer to besides the API's own.
fn shared() -> Vec<(&'static str, Value)> {
    vec![(
        "ArtifactRef",
        object(
            "An artifact a tool produced; download it at `url`",
            vec![
                req("id", string()),
                req("name", string()),
                req("mime_type", string()),
                req("size", integer()),
                req("url", string()),
            ],
        ),
    )]
}

/// Adds the event schemas to the components and lists them on every `text/event-stream`
/// response.
pub fn describe(doc: &mut Value) {
    let mut listing = Map::new();
    let mut names = Vec::new();
    if let Some(schemas) = doc
        .pointer_mut("/components/schemas")
        .and_then(Value::as_object_mut)
    {
        for (name, schema) in shared() {
            schemas.insert(name.into(), schema);
        }
        for (event, name, schema) in events() {
            schemas.insert(name.into(), schema);
            listing.insert(event.into(), schema_ref(name));
            names.push(format!("`{event}`"));
        }
    }
    let note = format!(
        " Events: {} (`x-sse-events` names each one's data schema).",
        names.join(", ")
    );
    super::each_operation(doc, |_, op| {
        let Some(responses) = op.get_mut("responses").and_then(Value::as_object_mut) else {
            return;
        };
        for response in responses.values_mut() {
            let Some(stream) = response.pointer_mut("/content/text~1event-stream") else {
                continue;
            };
            stream["x-sse-events"] = Value::Object(listing.clone());
            if let Some(text) = response.get("description").and_then(Value::as_str) {
                response["description"] = json!(format!("{text}.{note}"));
            }
        }
    });
}
