//! The SSE event payloads of docs/api.md as OpenAPI component schemas, written once in the tables
//! below: each `event:` name has a schema (`StartEvent`, `StepEvent`, …), `step` and `answer`
//! are one of their tagged variants. OpenAPI cannot type the events of a `text/event-stream`
//! body, so every such response lists them in an `x-sse-events` extension (event name → schema)
//! and its description. The tests check real [`crate::agent::AgentEvent`]s against these schemas,
//! so a new event or field fails there until it is described here.

use serde_json::{json, Map, Value};

mod steps;
#[cfg(test)]
pub use steps::step_types;
use steps::{caller_calls, steps};

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
