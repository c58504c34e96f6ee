//! Tools on `/v1/responses`: the one place that maps the request's `tools`, `tool_choice` and
//! `function_call_output` items onto a run. `function` tools are caller tools (docs/api.md):
//! the run's `client_tools`; a call of one ends the response with `function_call` items, and
//! the next request answers them with `function_call_output` items (the continuation run).
//! Other tool types are a 400: the agents call their own tools.

use serde_json::{json, Value};

use crate::agent::caller_tools::ToolOutput;
use crate::llm::ToolDefinition;
use crate::server::openai::OpenAiError;

/// The caller tools of a request and what the response echoes of them.
#[derive(Debug, Default)]
pub struct CallerTools {
    pub definitions: Vec<ToolDefinition>,
    /// `tools` as the response echoes them.
    pub echoed: Vec<Value>,
    pub tool_choice: Value,
}

/// Reads `tools` and `tool_choice` (`auto` or `none`; the agent's model decides).
pub fn caller_tools(
    tools: Option<&Value>,
    choice: Option<&Value>,
) -> Result<CallerTools, OpenAiError> {
    let invalid = |m: String| OpenAiError::invalid(Some("tools"), m);
    let list = match tools {
        None => Vec::new(),
        Some(Value::Array(list)) => list.clone(),
        Some(_) => return Err(invalid("'tools' must be an array".into())),
    };
    let mut out = CallerTools::default();
    for (i, tool) in list.iter().enumerate() {
        let kind = tool
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("untyped");
        if kind != "function" {
            return Err(invalid(format!(
                "tools[{i}]: tools of type '{kind}' are not supported (only 'function'): \
                 reagent agents call their own tools"
            )));
        }
        let name = tool
            .get("name")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
            .ok_or_else(|| invalid(format!("tools[{i}] needs a 'name'")))?;
        let description = tool
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let parameters = match tool.get("parameters") {
            None | Some(Value::Null) => json!({"type": "object", "properties": {}}),
            Some(p) => p.clone(),
        };
        out.echoed.push(json!({
            "type": "function", "name": name, "description": description,
            "parameters": parameters, "strict": tool.get("strict").and_then(Value::as_bool).unwrap_or(false),
        }));
        out.definitions.push(ToolDefinition {
            name: name.to_string(),
            description: description.to_string(),
            parameters,
        });
    }
    out.tool_choice = match choice {
        None => Value::String("auto".into()),
        Some(Value::String(s)) if s == "auto" || s == "none" => Value::String(s.clone()),
        Some(_) => {
            return Err(OpenAiError::invalid(
                Some("tool_choice"),
                "'tool_choice' can only be 'auto' or 'none'",
            ))
        }
    };
    Ok(out)
}

/// A `function_call_output` input item as a caller tool's output.
pub fn tool_output(i: usize, item: &Value) -> Result<ToolOutput, OpenAiError> {
    let call_id = item.get("call_id").and_then(Value::as_str);
    let output = match item.get("output") {
        Some(Value::String(s)) => Some(s.clone()),
        // Output as content parts: their texts, joined.
        Some(Value::Array(parts)) => Some(
            parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n"),
        ),
        _ => None,
    };
    match (call_id, output) {
        (Some(call_id), Some(output)) => Ok(ToolOutput {
            call_id: call_id.to_string(),
            output,
        }),
        _ => Err(OpenAiError::invalid(
            Some("input"),
            format!("input[{i}]: a function_call_output needs 'call_id' and 'output'"),
        )),
    }
}
