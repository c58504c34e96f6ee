//! What `#[utoipa::path]` cannot say, added to the generated document (see the module above):
//! the public operations and the bearer scheme, the errors every operation can answer, and
//! the configuration's limits and names on the request bodies.

use serde_json::{json, Map, Value};

/// Any character but NUL (PostgreSQL cannot store it), as a regex class.
const NOT_NUL: &str = r"[^\u0000]";
/// Neither NUL nor whitespace as Rust's `str::trim` sees it (spelled out: `\s` differs
/// between regex dialects, e.g. on U+0085 and U+001C).
/// [`NOT_NUL`] for the other refinements.
pub(super) fn no_nul() -> &'static str {
    NOT_NUL
}

/// The pattern of a query: not blank, no NUL.
pub(super) fn query_pattern() -> String {
    format!("^{NOT_NUL}*{NOT_BLANK}{NOT_NUL}*$")
}

const NOT_BLANK: &str =
    r"[^\u0000\u0009-\u000D\u0020\u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]";

/// Operations that need no API key (docs/api.md); `/metrics` has its own optional key.
pub const PUBLIC: [&str; 4] = ["/healthz", "/readyz", "/metrics", "/api/instances"];

/// An error response with the one error body.
fn error(description: &str) -> Value {
    json!({"description": description,
           "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}})
}

/// Every operation: public ones opt out of security, the others get their parameters fixed and
/// the error statuses they can answer.
pub fn operations(doc: &mut Value) {
    super::each_operation(doc, |path, op| {
        if PUBLIC.contains(&path) {
            op.insert("security".into(), json!([]));
        } else {
            protected(op);
        }
    });
}

/// One `/api` operation: parameters fixed, then 401, 429, 500 and what its inputs add.
fn protected(op: &mut Map<String, Value>) {
    let has_body = op.contains_key("requestBody");
    let params = op
        .get_mut("parameters")
        .and_then(Value::as_array_mut)
        .map(std::mem::take)
        .unwrap_or_default();
    let mut reads_input = has_body;
    let mut has_path = false;
    let params: Vec<Value> = params
        .into_iter()
        .map(|p| {
            let location = p["in"].as_str().unwrap_or_default().to_string();
            has_path |= location == "path";
            reads_input |= location == "query" || location == "header";
            fix_parameter(p, &location)
        })
        .collect();
    if !params.is_empty() {
        op.insert("parameters".into(), Value::Array(params));
    }
    let Some(responses) = op
        .entry("responses")
        .or_insert_with(|| json!({}))
        .as_object_mut()
    else {
        return;
    };
    let mut add = |status: &str, description: &str| {
        responses
            .entry(status.to_string())
            .or_insert_with(|| error(description));
    };
    add("401", "`unauthorized`: missing or wrong API key");
    add("429", "`rate_limited` (with `Retry-After`)");
    add("500", "`internal`");
    if reads_input {
        add("400", "`invalid_request`");
    }
    if has_body {
        add("413", "`payload_too_large`: body over the size limit");
    }
    if has_path {
        add(
            "404",
            "`not_found`: unknown, malformed or another tenant's id",
        );
    }
}

/// The request bodies' text limits, modes and the configured model and tool names.
pub fn inputs(doc: &mut Value, max_query_chars: usize, models: &[String], tools: &[String]) {
    let text = json!({"type": "string", "minLength": 1, "maxLength": max_query_chars,
                      "pattern": format!("^{NOT_NUL}*{NOT_BLANK}{NOT_NUL}*$"),
                      "description": "Not blank, no NUL; at most this many characters"});
    let plain = |nullable: bool| {
        let ty = if nullable {
            json!(["string", "null"])
        } else {
            json!("string")
        };
        json!({"type": ty, "pattern": format!("^{NOT_NUL}*$"), "description": "No NUL"})
    };
    let nullable_enum = |names: &[String]| {
        let mut values: Vec<Value> = names.iter().map(|n| json!(n)).collect();
        values.push(Value::Null);
        json!({"type": ["string", "null"], "enum": values})
    };
    let mode = json!({"type": ["string", "null"], "enum": ["auto", "native", "json", null],
                      "description": "`auto` (default), `native` or `json`."});
    let Some(schemas) = doc.pointer_mut("/components/schemas") else {
        return;
    };
    for (schema, field, value) in [
        ("StartRunBody", "query", text.clone()),
        ("ChatBody", "query", text.clone()),
        ("InterruptBody", "content", text),
        ("StartRunBody", "mode", mode.clone()),
        ("ChatBody", "mode", mode),
        (
            "StartRunBody",
            "max_iterations",
            json!({"type": ["integer", "null"], "minimum": 1, "maximum": u32::MAX}),
        ),
        ("StartRunBody", "model", nullable_enum(models)),
        ("ChatBody", "model", nullable_enum(models)),
        ("CreateConversation", "model", nullable_enum(models)),
        ("CreateConversation", "title", plain(true)),
        ("CreateConversation", "system_prompt", plain(true)),
        ("RenameConversation", "title", plain(false)),
        ("DecideBody", "reason", plain(true)),
        (
            "CreateConversation",
            "tools",
            json!({"type": ["array", "null"], "items": {"type": "string", "enum": tools}}),
        ),
    ] {
        if let Some(props) = schemas.pointer_mut(&format!("/{schema}/properties")) {
            props[field] = value;
        }
    }
    engine_fields(schemas);
}

/// `engine` on the bodies that take one: one of the three engine names, or null.
fn engine_fields(schemas: &mut Value) {
    let engine = json!({"type": ["string", "null"], "enum": ["react", "dag", "auto", null],
                        "description": "`react`, `dag` or `auto`; the conversation's, else `REAGENT_DEFAULT_ENGINE`, when absent."});
    for schema in ["StartRunBody", "ChatBody", "CreateConversation"] {
        if let Some(props) = schemas.pointer_mut(&format!("/{schema}/properties")) {
            props["engine"] = engine.clone();
        }
    }
}

/// The bearer scheme, required by default (public operations opted out in [`operations`]).
pub fn security(doc: &mut Value) {
    if let Some(components) = doc.get_mut("components").and_then(Value::as_object_mut) {
        components.insert(
            "securitySchemes".into(),
            json!({"bearer": {"type": "http", "scheme": "bearer",
                   "description": "Only when API keys are configured (docs/api.md)"}}),
        );
    }
    doc["security"] = json!([{"bearer": []}]);
}

/// A query or header value cannot be JSON `null`, and is never required here.
fn fix_parameter(mut p: Value, location: &str) -> Value {
    if location == "path" {
        return p;
    }
    p["required"] = json!(false);
    if location == "header" && p["name"] == "Last-Event-ID" {
        // Parsed as u64 after trimming; an empty value means "absent" (`sse::resume_point`).
        p["schema"] =
            json!({"type": "string", "pattern": r"^(\+?([0-9]{1,19}|1[0-7][0-9]{18}))?$"});
        return p;
    }
    if let Some(schema) = p.get_mut("schema") {
        widen_unsigned(schema);
    }
    if let Some(types) = p.pointer_mut("/schema/type") {
        if let Some(list) = types.as_array() {
            let kept: Vec<&Value> = list.iter().filter(|t| t.as_str() != Some("null")).collect();
            if let [only] = kept.as_slice() {
                *types = (*only).clone();
            }
        }
    }
    p
}

/// utoipa documents `u32`/`u64` as `int32`/`int64` with `minimum: 0`, whose implied maximum is
/// the signed one; state the real unsigned range instead.
fn widen_unsigned(schema: &mut Value) {
    if schema.get("minimum") != Some(&json!(0)) {
        return;
    }
    let max = match schema.get("format").and_then(Value::as_str) {
        Some("int32") => json!(u32::MAX),
        Some("int64") => json!(u64::MAX),
        _ => return,
    };
    if let Some(obj) = schema.as_object_mut() {
        obj.remove("format");
        obj.insert("maximum".into(), max);
    }
}
