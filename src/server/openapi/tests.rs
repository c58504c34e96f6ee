use chrono::Utc;
use serde::Serialize;
use serde_json::{json, Value};
use uuid::Uuid;

use super::*;
use crate::agent::events::{AnswerEvent, CompactEvent, StartEvent, StepEvent};
use crate::agent::{AgentEvent, Interrupt, Mode, RunOutcome, RunStatus};
use crate::domain::{ArtifactRef, MessageKind, MessageRole};
use crate::server::views;

fn doc() -> Value {
    document_for(100, &["mock".into()], &["calculator".into()])
}

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

/// A small JSON Schema check of what these documents use, strict about fields the schema does
/// not document (so a field added to a payload fails until it is described).
fn check(doc: &Value, schema: &Value, value: &Value, at: &str) -> Result<(), String> {
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

fn check_component(doc: &Value, name: &str, value: &impl Serialize) {
    let value = serde_json::to_value(value).unwrap();
    let schema = json!({"$ref": format!("#/components/schemas/{name}")});
    if let Err(e) = check(doc, &schema, &value, name) {
        panic!("{e}");
    }
}

/// The `step.type` of each variant; no wildcard, so a new variant fails to compile here until
/// `events::steps` describes it and [`steps`] has a sample of it.
fn step_type(step: &StepEvent) -> &'static str {
    match step {
        StepEvent::Thinking { .. } => "thinking",
        StepEvent::ToolStart { .. } => "tool_start",
        StepEvent::ToolEnd { .. } => "tool_end",
        StepEvent::Selection { .. } => "selection",
        StepEvent::Interrupt { .. } => "interrupt",
        StepEvent::ApprovalRequired { .. } => "approval_required",
    }
}

fn steps() -> Vec<StepEvent> {
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
        },
        StepEvent::ToolStart {
            iteration: 1,
            call_id: "c1".into(),
            tool: "calculator".into(),
            arguments: json!({"expression": "1+1"}),
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
        },
    ]
}

fn outcomes() -> Vec<RunOutcome> {
    let failed = RunOutcome::failed(Mode::Json, "The model could not be reached.", "timeout");
    let chained = RunOutcome {
        status: RunStatus::Completed,
        unprocessed_interrupts: vec![Interrupt {
            id: Uuid::new_v4(),
            content: "late".into(),
        }],
        next_run_id: Some(Uuid::new_v4().to_string()),
        error: None,
        ..failed.clone()
    };
    vec![failed, chained]
}

#[test]
fn every_sse_event_matches_its_documented_schema() {
    let doc = doc();
    let mut events = vec![AgentEvent::Start(StartEvent {
        run_id: Uuid::new_v4().to_string(),
        conversation_id: Uuid::new_v4().to_string(),
        model: "mock".into(),
        mode: Mode::Native,
    })];
    let steps = steps();
    let types: Vec<&str> = steps.iter().map(step_type).collect();
    assert_eq!(types, events::step_types(), "a sample of every step type");
    events.extend(steps.into_iter().map(AgentEvent::Step));
    events.push(AgentEvent::Compact(CompactEvent {
        messages_before: 9,
        messages_after: 3,
        tokens_before: 900,
        tokens_after: 300,
        summary: "so far".into(),
    }));
    for answer in [
        AnswerEvent::Start,
        AnswerEvent::Delta {
            content: "4".into(),
        },
        AnswerEvent::Reset,
        AnswerEvent::Done {
            content: "4".into(),
            fallback: false,
        },
    ] {
        events.push(AgentEvent::Answer(answer));
    }
    events.extend(outcomes().into_iter().map(AgentEvent::Done));
    let names: Vec<(&str, &str)> = events::events().iter().map(|e| (e.0, e.1)).collect();
    for event in events {
        let (_, schema) = names
            .iter()
            .find(|(name, _)| *name == event.name())
            .unwrap_or_else(|| panic!("no schema for {}", event.name()));
        let data: Value = serde_json::from_str(&event.data_json()).unwrap();
        let reference = json!({"$ref": format!("#/components/schemas/{schema}")});
        if let Err(e) = check(&doc, &reference, &data, event.name()) {
            panic!("{e}");
        }
    }
    // A payload the schemas do not describe is caught.
    let bad = json!({"type": "thinking", "iteration": 1, "reasoning": "", "extra": 1});
    assert!(check(
        &doc,
        &json!({"$ref": "#/components/schemas/StepEvent"}),
        &bad,
        "x"
    )
    .is_err());
}

#[test]
fn every_event_stream_response_lists_the_events() {
    let doc = doc();
    let mut streams = 0;
    for item in doc["paths"].as_object().unwrap().values() {
        for op in item.as_object().unwrap().values() {
            for response in op["responses"].as_object().unwrap().values() {
                if let Some(stream) = response.pointer("/content/text~1event-stream") {
                    let listed = stream["x-sse-events"].as_object().unwrap();
                    assert_eq!(listed.len(), 5, "{listed:?}");
                    streams += 1;
                }
            }
        }
    }
    assert_eq!(streams, 3, "start, chat and events stream");
}

fn sample_views() -> Vec<(&'static str, Value)> {
    let now = Utc::now();
    let conversation = views::Conversation {
        id: Uuid::new_v4(),
        title: None,
        model: Some("mock".into()),
        system_prompt: None,
        tools: Some(vec!["calculator".into()]),
        created_at: now,
        updated_at: now,
        active_run_id: None,
    };
    let message = views::Message {
        id: Uuid::new_v4(),
        role: MessageRole::User,
        kind: MessageKind::Interrupt,
        content: "q".into(),
        run_id: Some(Uuid::new_v4()),
        created_at: now,
    };
    let usage = || views::Usage::from(crate::llm::Usage::call(3, 4));
    let run = views::Run {
        id: Uuid::new_v4(),
        conversation_id: Uuid::new_v4(),
        status: RunStatus::MaxIterations,
        mode: Mode::Json,
        model: "mock".into(),
        iterations: 3,
        tool_calls: 2,
        usage: usage(),
        started_at: now,
        finished_at: Some(now),
        error: None,
    };
    fn value(v: impl Serialize) -> Value {
        serde_json::to_value(v).unwrap()
    }
    vec![
        ("Conversation", value(&conversation)),
        (
            "ConversationDetail",
            value(views::ConversationDetail {
                conversation,
                messages: vec![message],
            }),
        ),
        ("Run", value(run)),
        (
            "InterruptAccepted",
            value(views::InterruptAccepted {
                id: Uuid::new_v4(),
                run_id: Uuid::new_v4(),
                next_run: Some(true),
            }),
        ),
        (
            "Error",
            value(views::ErrorBody {
                error: views::ErrorDetail {
                    code: "not_found".into(),
                    message: "not found".into(),
                },
            }),
        ),
    ]
}

#[test]
fn response_types_match_their_generated_schemas() {
    let doc = doc();
    for (name, value) in sample_views() {
        check_component(&doc, name, &value);
    }
    // `null` where a value may be absent, yet always sent.
    let run = &doc["components"]["schemas"]["Run"];
    assert!(run["required"]
        .as_array()
        .unwrap()
        .contains(&json!("finished_at")));
}

#[test]
fn every_operation_is_summarised_and_its_answers_typed() {
    let doc = doc();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let at = format!("{method} {path}");
            assert!(
                op["summary"].as_str().is_some_and(|s| !s.is_empty()),
                "{at}"
            );
            for (status, response) in op["responses"].as_object().unwrap() {
                let json_schema = response.pointer("/content/application~1json/schema");
                if status.starts_with('2') {
                    if let Some(schema) = json_schema {
                        assert_ne!(schema, &json!({}), "{at} {status}");
                    }
                } else {
                    assert_eq!(
                        json_schema,
                        Some(&json!({"$ref": "#/components/schemas/Error"})),
                        "{at} {status}"
                    );
                }
            }
        }
    }
}

#[test]
fn links_name_existing_operations() {
    let doc = doc();
    let ids: Vec<&str> = doc["paths"]
        .as_object()
        .unwrap()
        .values()
        .flat_map(|item| item.as_object().unwrap().values())
        .filter_map(|op| op["operationId"].as_str())
        .collect();
    let mut links = 0;
    for item in doc["paths"].as_object().unwrap().values() {
        for op in item.as_object().unwrap().values() {
            for response in op["responses"].as_object().unwrap().values() {
                for link in response["links"].as_object().into_iter().flatten() {
                    let target = link.1["operationId"].as_str().unwrap();
                    assert!(ids.contains(&target), "{target}");
                    links += 1;
                }
            }
        }
    }
    assert_eq!(links, links::LINKS.len());
}
