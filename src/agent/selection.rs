//! Tool selection: with many tools, one structured call picks the few relevant to
//! the query from a compact catalog, so the loop's prompt stays small. Never fatal: any failure
//! keeps the full tool set.

use serde_json::{json, Value};

use super::events::StepEvent;
use super::prompts;
use crate::llm::{structured_llm_call, Llm, Message, StructuredCall, Usage};
use crate::telemetry::{with_call_kind, CallKind};
use crate::tools::ToolRegistry;

/// Roughly 80 characters per catalog line: name plus the first line of the description.
const CATALOG_LINE_CHARS: usize = 80;

/// What selection decided.
pub struct Selection {
    pub tools: ToolRegistry,
    pub event: StepEvent,
    pub usage: Usage,
}

/// One line per tool, no parameter schemas.
pub fn catalog(tools: &ToolRegistry) -> String {
    let mut out = String::new();
    for t in tools.iter() {
        let desc = t.description().lines().next().unwrap_or("");
        let mut line = format!("- {}: {}", t.name(), desc);
        if line.chars().count() > CATALOG_LINE_CHARS {
            line = line
                .chars()
                .take(CATALOG_LINE_CHARS - 1)
                .collect::<String>()
                + "…";
        }
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// Names from `{"tools": [...]}` that exist in the registry, deduplicated, at most `max`.
fn parse_selection(raw: &Value, tools: &ToolRegistry, max: usize) -> Result<Vec<String>, String> {
    let list = raw
        .get("tools")
        .and_then(Value::as_array)
        .ok_or("expected {\"tools\": [names]}")?;
    let mut names: Vec<String> = Vec::new();
    for name in list.iter().filter_map(Value::as_str) {
        if tools.get(name).is_some() && !names.iter().any(|n| n == name) {
            names.push(name.to_string());
        }
    }
    names.truncate(max);
    if names.is_empty() {
        return Err("no valid tool names selected".into());
    }
    Ok(names)
}

/// Runs the selection call. `iteration` is 0: it happens before the loop.
pub async fn select_tools(
    llm: &dyn Llm,
    query: &str,
    tools: &ToolRegistry,
    max: usize,
) -> Selection {
    let user = format!(
        "User request:\n{query}\n\nTool catalog:\n{}\nSelect at most {max} tools.",
        catalog(tools)
    );
    let schema = json!({
        "type": "object",
        "properties": {"tools": {"type": "array", "items": {"type": "string"}, "maxItems": max}},
        "required": ["tools"]
    });
    let call = StructuredCall {
        messages: vec![
            Message::system(prompts::SELECTION_SYSTEM),
            Message::user(user),
        ],
        schema_name: "select_tools".into(),
        schema,
        parse_fn: Box::new(|raw: &Value| parse_selection(raw, tools, max)),
        default_value: None,
        regex_fallback: None,
    };
    let (selected, usage) =
        match with_call_kind(CallKind::Selection, structured_llm_call(llm, call)).await {
            Ok(r) => (Some(r.value), r.usage),
            Err(crate::llm::StructuredError::Exhausted {
                usage, last_error, ..
            }) => {
                tracing::warn!(error = %last_error, "tool selection failed; using every tool");
                (None, usage)
            }
        };
    let total_tools = tools.len();
    match selected {
        Some(names) => Selection {
            tools: tools.filtered(&names),
            event: StepEvent::Selection {
                iteration: 0,
                total_tools,
                selected: names,
                fallback: false,
            },
            usage,
        },
        None => Selection {
            tools: tools.clone(),
            event: StepEvent::Selection {
                iteration: 0,
                total_tools,
                selected: tools.names(),
                fallback: true,
            },
            usage,
        },
    }
}
