//! The agent bodies of `/api/agents` as surely accepted: the configured model and tool names,
//! the engine and synthesis words, the API's bounds (src/runs/agents.rs) and the sampling
//! ranges, so that a client generated from the document (or a fuzzer) never meets a 400. PUT
//! gets the same body without `name` (the path names the agent; a body may repeat it).

use serde_json::{json, Value};

use super::refine::no_nul;
use crate::runs::{MAX_AGENT_FIELD_CHARS, MAX_AGENT_TOOLS};

/// Refines `AgentBody` and adds `AgentUpdateBody` for `PUT /api/agents/{name}`.
pub fn refine(doc: &mut Value, max_query_chars: usize, models: &[String], tools: &[String]) {
    let mut models: Vec<Value> = models.iter().map(|m| json!(m)).collect();
    models.push(Value::Null);
    let text = |max: usize| json!({"type": ["string", "null"], "pattern": format!("^{}*$", no_nul()), "maxLength": max});
    let fields = [
        (
            "name",
            json!({"type": "string", "pattern": "^[A-Za-z0-9_.:-]{1,64}$",
                        "description": "1 to 64 letters, digits, `_`, `-`, `.` or `:`"}),
        ),
        ("description", text(MAX_AGENT_FIELD_CHARS)),
        ("system_prompt", text(max_query_chars)),
        ("model", json!({"type": ["string", "null"], "enum": models})),
        (
            "tools",
            json!({"type": ["array", "null"], "maxItems": MAX_AGENT_TOOLS,
                         "items": {"type": "string", "enum": tools}}),
        ),
        (
            "engine",
            json!({"type": ["string", "null"], "enum": ["react", "dag", "auto", null]}),
        ),
        (
            "synthesis",
            // `true` and `false` are read as `always` and `never`, as in the configuration.
            json!({"type": ["string", "boolean", "null"],
                   "enum": ["auto", "always", "never", true, false, null]}),
        ),
        (
            "max_iterations",
            json!({"type": ["integer", "null"], "minimum": 1, "maximum": u32::MAX}),
        ),
        (
            "temperature",
            json!({"type": ["number", "null"], "minimum": 0, "maximum": 2}),
        ),
        // Above zero as an `f32` sees it: a tinier positive number reads as 0 and is refused.
        (
            "top_p",
            json!({"type": ["number", "null"], "minimum": 0.001, "maximum": 1}),
        ),
        (
            "seed",
            json!({"type": ["integer", "null"], "minimum": 0, "maximum": u64::MAX}),
        ),
    ];
    let Some(body) = doc.pointer_mut("/components/schemas/AgentBody") else {
        return;
    };
    for (field, value) in fields {
        body["properties"][field] = value;
    }
    body["required"] = json!(["name"]);
    let mut update = body.clone();
    if let Some(props) = update["properties"].as_object_mut() {
        props.remove("name");
    }
    if let Some(obj) = update.as_object_mut() {
        obj.remove("required");
    }
    doc["components"]["schemas"]["AgentUpdateBody"] = update;
    let put = "/paths/~1api~1agents~1{name}/put/requestBody/content/application~1json/schema";
    if let Some(schema) = doc.pointer_mut(put) {
        *schema = json!({"$ref": "#/components/schemas/AgentUpdateBody"});
    }
}
