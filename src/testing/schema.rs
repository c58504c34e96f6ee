//! A small JSON Schema checker for tests: does a value match a schema of the OpenAPI document
//! (`$ref`, `allOf`, `oneOf`, `type`, `const`, `enum`, `required`, `properties`, `items`)? It
//! is strict about fields a schema does not list, so a field added to a response or an event
//! fails until the document describes it. Used by `server::openapi`'s unit tests and by the API
//! suite's conformance test on real responses.

use serde_json::Value;

/// The schema a `$ref` names, or the schema itself.
fn resolve<'a>(doc: &'a Value, schema: &'a Value) -> &'a Value {
    match schema.get("$ref").and_then(Value::as_str) {
        Some(r) => doc
            .pointer(r.trim_start_matches('#'))
            .unwrap_or_else(|| panic!("dangling {r}")),
        None => schema,
    }
}

/// The properties an object schema documents, through `allOf`.
fn documented(doc: &Value, schema: &Value) -> Vec<String> {
    let schema = resolve(doc, schema);
    let mut keys: Vec<String> = schema["properties"]
        .as_object()
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default();
    for part in schema["allOf"].as_array().into_iter().flatten() {
        keys.extend(documented(doc, part));
    }
    keys
}

fn type_matches(ty: &str, value: &Value) -> bool {
    match ty {
        "string" => value.is_string(),
        "integer" => value.is_u64() || value.is_i64(),
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        "null" => value.is_null(),
        other => panic!("unknown type {other}"),
    }
}

/// A small JSON Schema check of what the OpenAPI document uses, strict about fields the schema does
/// not document (so a field added to a payload fails until it is described).
pub fn check(doc: &Value, schema: &Value, value: &Value, at: &str) -> Result<(), String> {
    let schema = resolve(doc, schema);
    if let Some(parts) = schema["allOf"].as_array() {
        for part in parts {
            check_shape(doc, resolve(doc, part), value, at, false)?;
        }
        return strict_keys(doc, schema, value, at);
    }
    if let Some(options) = schema["oneOf"].as_array() {
        let passing = options
            .iter()
            .filter(|o| check(doc, o, value, at).is_ok())
            .count();
        return match passing {
            1 => Ok(()),
            n => Err(format!("{at}: {n} of oneOf match {value}")),
        };
    }
    check_shape(doc, schema, value, at, true)
}

fn strict_keys(doc: &Value, schema: &Value, value: &Value, at: &str) -> Result<(), String> {
    let known = documented(doc, schema);
    for key in value.as_object().into_iter().flatten().map(|(k, _)| k) {
        if !known.contains(key) {
            return Err(format!("{at}: undocumented field {key}"));
        }
    }
    Ok(())
}

fn check_shape(
    doc: &Value,
    schema: &Value,
    value: &Value,
    at: &str,
    strict: bool,
) -> Result<(), String> {
    let types: Vec<&str> = match &schema["type"] {
        Value::String(t) => vec![t.as_str()],
        Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
        _ => vec![],
    };
    if !types.is_empty() && !types.iter().any(|t| type_matches(t, value)) {
        return Err(format!("{at}: {value} is not {types:?}"));
    }
    if let Some(c) = schema.get("const") {
        if c != value {
            return Err(format!("{at}: {value} is not {c}"));
        }
    }
    if let Some(values) = schema["enum"].as_array() {
        if !values.contains(value) {
            return Err(format!("{at}: {value} not in {values:?}"));
        }
    }
    if let (Some(items), Some(list)) = (schema.get("items"), value.as_array()) {
        for (i, item) in list.iter().enumerate() {
            check(doc, items, item, &format!("{at}[{i}]"))?;
        }
    }
    let Some(object) = value.as_object() else {
        return Ok(());
    };
    for key in schema["required"].as_array().into_iter().flatten() {
        let key = key.as_str().unwrap_or_default();
        if !object.contains_key(key) {
            return Err(format!("{at}: missing {key}"));
        }
    }
    for (key, field) in object {
        match schema.pointer(&format!("/properties/{key}")) {
            Some(s) => check(doc, s, field, &format!("{at}.{key}"))?,
            // Strict only where the schema lists fields (`{}` is any value).
            None if strict && schema.get("properties").is_some() => {
                return Err(format!("{at}: undocumented field {key}"))
            }
            None => {}
        }
    }
    Ok(())
}

/// Checks `value` against the component schema `name` (`#/components/schemas/<name>`).
pub fn check_component(doc: &Value, name: &str, value: &Value) -> Result<(), String> {
    let schema = serde_json::json!({"$ref": format!("#/components/schemas/{name}")});
    check(doc, &schema, value, name)
}
