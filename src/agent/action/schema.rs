//! The JSON schema of a JSON-mode action for one run, sent as `response_format: {type:
//! "json_schema"}` to a model with the ability `json_schema`. A server that constrains its
//! output with a grammar built from it (llama.cpp's llama-server does) can then only write a final
//! answer or calls (one, or a list of several) of the run's tools, their arguments in each tool's
//! schema: no action without a tool name, no unknown tool, no prose around the object. A server
//! that refuses the schema makes the run fall back to `json_object` (`tool_loop::json_format`).

use serde::Serialize;
use serde_json::{json, Value};

use crate::domain::Abilities;
use crate::llm::{ResponseFormat, SchemaText, ToolDefinition};

/// What a JSON-mode loop call asks for: the action schema with `json_schema`, JSON with
/// `json_mode`, nothing otherwise.
pub fn response_format(abilities: Abilities, tools: &[ToolDefinition]) -> Option<ResponseFormat> {
    if abilities.json_schema {
        match action_schema(tools) {
            Ok(schema) => {
                return Some(ResponseFormat::JsonSchema {
                    name: "action",
                    schema,
                })
            }
            Err(e) => {
                tracing::warn!(error = %e, "the action schema could not be written; asking for JSON only")
            }
        }
    }
    abilities.json_mode.then_some(ResponseFormat::JsonObject)
}

/// Two alternatives, in the prompt's two forms: calls, a list of at least one call whose items
/// are each a call of one of the run's tools (its name a constant, its arguments its schema);
/// and the final answer. In each, the keys in the order the prompt gives them (which a grammar
/// follows). The single call with its `reasoning` is no longer offered (parse_action still reads
/// it): that free text, written after the call, can only justify a choice already made, and
/// Qwen2.5-Coder-0.5B filled it with made-up observations until the output cap (BENCHMARKS.md,
/// "The loop for small models").
pub fn action_schema(tools: &[ToolDefinition]) -> serde_json::Result<SchemaText> {
    let mut alternatives = Vec::with_capacity(2);
    if !tools.is_empty() {
        alternatives.push(Alternative::Calls(Object::new(
            CallsProperties {
                kind: Const { value: "tool_call" },
                calls: List {
                    kind: "array",
                    items: AnyOf {
                        any_of: tools.iter().map(call).collect(),
                    },
                    min_items: 1,
                },
            },
            &["type", "calls"],
        )));
    }
    alternatives.push(Alternative::Answer(Object::new(
        AnswerProperties {
            kind: Const {
                value: "final_answer",
            },
            answer: STRING,
        },
        &["type", "answer"],
    )));
    SchemaText::new(&AnyOf {
        any_of: alternatives,
    })
}

/// One call of `tool`, an item of the list.
fn call(tool: &ToolDefinition) -> Object<CallProperties<'_>> {
    Object::new(
        CallProperties {
            tool_name: Const { value: &tool.name },
            tool_args: arguments_schema(&tool.parameters),
        },
        &["tool_name", "tool_args"],
    )
}

#[derive(Serialize)]
struct AnyOf<T> {
    #[serde(rename = "anyOf")]
    any_of: Vec<T>,
}

#[derive(Serialize)]
#[serde(untagged)]
enum Alternative<'a> {
    Calls(Object<CallsProperties<'a>>),
    Answer(Object<AnswerProperties>),
}

/// `{"type": "object", "properties": …, "required": …, "additionalProperties": false}`.
#[derive(Serialize)]
struct Object<P> {
    #[serde(rename = "type")]
    kind: &'static str,
    properties: P,
    required: &'static [&'static str],
    #[serde(rename = "additionalProperties")]
    additional: bool,
}

impl<P> Object<P> {
    fn new(properties: P, required: &'static [&'static str]) -> Self {
        Self {
            kind: "object",
            properties,
            required,
            additional: false,
        }
    }
}

#[derive(Serialize)]
struct CallProperties<'a> {
    tool_name: Const<'a>,
    tool_args: Value,
}

#[derive(Serialize)]
struct CallsProperties<'a> {
    #[serde(rename = "type")]
    kind: Const<'a>,
    calls: List<'a>,
}

/// `{"type": "array", "items": {"anyOf": [each call]}, "minItems": 1}`.
#[derive(Serialize)]
struct List<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    items: AnyOf<Object<CallProperties<'a>>>,
    #[serde(rename = "minItems")]
    min_items: usize,
}

#[derive(Serialize)]
struct AnswerProperties {
    #[serde(rename = "type")]
    kind: Const<'static>,
    answer: TypeOnly,
}

#[derive(Serialize)]
struct Const<'a> {
    #[serde(rename = "const")]
    value: &'a str,
}

#[derive(Clone, Copy, Serialize)]
struct TypeOnly {
    #[serde(rename = "type")]
    kind: &'static str,
}

const STRING: TypeOnly = TypeOnly { kind: "string" };

/// A tool's parameters as they can stand inside the action schema: an object schema, or any
/// object when it is none, or when it refers to definitions by `$ref` (its references point
/// into its own document, which is no longer the root here).
fn arguments_schema(parameters: &Value) -> Value {
    let usable = parameters.is_object() && !has_ref(parameters);
    if usable {
        parameters.clone()
    } else {
        json!({"type": "object"})
    }
}

fn has_ref(v: &Value) -> bool {
    match v {
        Value::Object(m) => m.contains_key("$ref") || m.values().any(has_ref),
        Value::Array(items) => items.iter().any(has_ref),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str, parameters: Value) -> ToolDefinition {
        ToolDefinition {
            name: name.into(),
            description: String::new(),
            parameters,
        }
    }

    #[test]
    fn calls_are_one_alternative_whose_items_are_the_runs_tools_and_the_answer_another() {
        let calc = json!({"type": "object", "properties": {"expression": {"type": "string"}}});
        let refs = json!({"type": "object", "properties": {"p": {"$ref": "#/$defs/P"}}});
        let tools = [
            tool("calculator", calc.clone()),
            tool("r", refs),
            tool("clock", Value::Null),
        ];
        let text = action_schema(&tools).unwrap();
        let schema: Value = serde_json::from_str(text.get()).unwrap();
        let alts = schema["anyOf"].as_array().unwrap();
        assert_eq!(alts.len(), 2);
        let calls = &alts[0];
        assert_eq!(calls["properties"]["type"], json!({"const": "tool_call"}));
        assert_eq!(calls["required"], json!(["type", "calls"]));
        assert_eq!(calls["additionalProperties"], json!(false));
        let list = &calls["properties"]["calls"];
        assert_eq!(list["type"], json!("array"));
        assert_eq!(list["minItems"], json!(1));
        let items = list["items"]["anyOf"].as_array().unwrap();
        assert_eq!(items.len(), 3);
        assert_eq!(
            items[0]["properties"],
            json!({"tool_name": {"const": "calculator"}, "tool_args": calc})
        );
        assert_eq!(items[0]["required"], json!(["tool_name", "tool_args"]));
        assert_eq!(items[0]["additionalProperties"], json!(false));
        // A `$ref` the schema's new root cannot resolve, or no schema: any object.
        assert_eq!(
            items[1]["properties"]["tool_args"],
            json!({"type": "object"})
        );
        assert_eq!(
            items[2]["properties"]["tool_args"],
            json!({"type": "object"})
        );
        assert_eq!(
            alts[1]["properties"]["type"],
            json!({"const": "final_answer"})
        );
        assert_eq!(alts[1]["required"], json!(["type", "answer"]));
        // The text keeps the prompt's order, which a grammar follows.
        let at = |k: &str| text.get().find(k).unwrap();
        assert!(at(r#""type":{"const":"tool_call"}"#) < at(r#""calls""#));
        assert!(at(r#""tool_name""#) < at(r#""tool_args""#));
        assert!(!text.get().contains("reasoning"));
        // Without tools there is nothing to call.
        let text = action_schema(&[]).unwrap();
        let schema: Value = serde_json::from_str(text.get()).unwrap();
        assert_eq!(schema["anyOf"].as_array().unwrap().len(), 1);
    }

    #[test]
    fn the_format_follows_the_abilities() {
        let mut a = Abilities::default();
        assert_eq!(response_format(a, &[]), Some(ResponseFormat::JsonObject));
        a.json_schema = true;
        assert!(matches!(
            response_format(a, &[]),
            Some(ResponseFormat::JsonSchema { name: "action", .. })
        ));
        assert_eq!(response_format(Abilities::text_only(), &[]), None);
    }
}
