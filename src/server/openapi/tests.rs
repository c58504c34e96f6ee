use chrono::Utc;
use serde::Serialize;
use serde_json::{json, Value};
use uuid::Uuid;

use super::*;
use crate::agent::caller_tools::{CallerCall, RequiredAction};
use crate::agent::events::{AnswerEvent, CompactEvent, StartEvent, StepEvent};
use crate::agent::{AgentEvent, Interrupt, Mode, RunOutcome, RunStatus};
use crate::domain::{ArtifactRef, MessageKind, MessageRole};
use crate::server::views;
use crate::testing::schema::{self, check};

fn doc() -> Value {
    document_for(100, &["mock".into()], &["calculator".into()])
}

fn check_component(doc: &Value, name: &str, value: &impl Serialize) {
    let value = serde_json::to_value(value).unwrap();
    if let Err(e) = schema::check_component(doc, name, &value) {
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
        StepEvent::ToolProgress { .. } => "tool_progress",
        StepEvent::Selection { .. } => "selection",
        StepEvent::Interrupt { .. } => "interrupt",
        StepEvent::ApprovalRequired { .. } => "approval_required",
        StepEvent::Resumed { .. } => "resumed",
        StepEvent::Plan { .. } => "plan",
        StepEvent::DagStep { .. } => "dag_step",
        StepEvent::Analysis { .. } => "analysis",
        StepEvent::Replan { .. } => "replan",
        StepEvent::Limit { .. } => "limit",
        StepEvent::CallerToolCalls { .. } => "client_tool_calls",
        StepEvent::Safeguard { .. } => "safeguard",
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
            dag_step: Some("A".into()),
        },
        StepEvent::ToolStart {
            iteration: 1,
            call_id: "c1".into(),
            tool: "calculator".into(),
            arguments: json!({"expression": "1+1"}),
            dag_step: None,
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
            dag_step: Some("A".into()),
        },
        StepEvent::ToolProgress {
            iteration: 1,
            call_id: "c1".into(),
            tool: "travel".into(),
            message: "looking up flights".into(),
            dag_step: Some("A".into()),
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
            dag_step: None,
        },
        StepEvent::Plan {
            round: 1,
            steps: vec![crate::agent::events::PlanStepView {
                id: "A".into(),
                task: "look it up".into(),
                dependencies: vec![],
                tool_hint: Some("calculator".into()),
                model_hint: None,
                model: "mock".into(),
            }],
        },
        StepEvent::DagStep {
            round: 1,
            step_id: "A".into(),
            status: crate::agent::events::DagStatus::Completed,
            model: "mock".into(),
            result: Some("2".into()),
            error: None,
            duration_ms: Some(4),
        },
        StepEvent::Analysis {
            round: 1,
            achieved: false,
            confidence: 0.4,
            reasoning: "half done".into(),
        },
        StepEvent::Replan {
            round: 2,
            reason: "half done".into(),
        },
        StepEvent::Resumed {
            iteration: 3,
            instance: "node-a".into(),
        },
        StepEvent::Limit {
            iteration: 2,
            limit: crate::agent::events::ToolLimit::ToolCallsPerReply,
            max: 32,
            skipped: 9968,
            dag_step: Some("A".into()),
        },
        StepEvent::Safeguard {
            iteration: 4,
            kind: crate::agent::events::SafeguardKind::CycleWarning,
            tool: Some("calculator".into()),
            dag_step: Some("A".into()),
        },
        StepEvent::CallerToolCalls {
            iteration: 1,
            calls: vec![CallerCall {
                call_id: "c2".into(),
                name: "confirm".into(),
                arguments: "{\"question\":\"ok?\"}".into(),
            }],
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
        synthesis: true,
        ..failed.clone()
    };
    let dag = RunOutcome {
        dag: Some(crate::agent::events::DagSummary {
            engine: crate::domain::Engine::Dag,
            rounds: 2,
            achieved: true,
            confidence: 0.9,
        }),
        trace_id: Some("4bf92f3577b34da6a3ce929d0e0e4736".into()),
        trace_url: Some("http://phoenix:6006/t/4bf92f3577b34da6a3ce929d0e0e4736".into()),
        ..chained.clone()
    };
    let paused = RunOutcome {
        status: RunStatus::RequiresAction,
        answer: String::new(),
        error: None,
        required_action: Some(RequiredAction {
            tool_calls: vec![CallerCall {
                call_id: "c2".into(),
                name: "confirm".into(),
                arguments: "{}".into(),
            }],
        }),
        ..failed.clone()
    };
    vec![failed, chained, dag, paused]
}

#[test]
fn every_sse_event_matches_its_documented_schema() {
    let doc = doc();
    let mut events = vec![AgentEvent::Start(StartEvent {
        run_id: Uuid::new_v4().to_string(),
        conversation_id: Uuid::new_v4().to_string(),
        model: "mock".into(),
        mode: Mode::Native,
        engine: crate::domain::Engine::Dag,
        continues: Some(Uuid::new_v4().to_string()),
        trace_id: Some("4bf92f3577b34da6a3ce929d0e0e4736".into()),
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
        dag_step: Some("A".into()),
    }));
    for answer in [
        AnswerEvent::start(crate::domain::AnswerSource::Reply),
        AnswerEvent::Start { source: None },
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
    assert_eq!(streams, 4, "start, chat, tool outputs and events stream");
}

fn sample_views() -> Vec<(&'static str, Value)> {
    let now = Utc::now();
    let conversation = views::Conversation {
        id: Uuid::new_v4(),
        title: None,
        model: Some("mock".into()),
        system_prompt: None,
        tools: Some(vec!["calculator".into()]),
        agent: Some("reagent".into()),
        agent_version: Some(2),
        engine: Some(crate::domain::Engine::Dag),
        created_at: now,
        updated_at: now,
        active_run_id: None,
        forked_from: None,
    };
    let message = views::Message {
        id: Uuid::new_v4(),
        role: MessageRole::User,
        kind: MessageKind::Interrupt,
        content: "q".into(),
        run_id: Some(Uuid::new_v4()),
        created_at: now,
        images: vec![
            crate::domain::MessageImage::Artifact {
                artifact_id: Uuid::new_v4().to_string(),
            }
            .into(),
            crate::domain::MessageImage::Url {
                url: "https://example.com/a.png".into(),
            }
            .into(),
        ],
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

#[test]
fn agent_bodies_say_what_is_accepted_and_put_takes_no_name() {
    let doc = doc();
    let body = &doc["components"]["schemas"]["AgentBody"];
    assert_eq!(body["required"], json!(["name"]), "{body}");
    assert_eq!(body["properties"]["model"]["enum"], json!(["mock", null]));
    assert_eq!(
        body["properties"]["tools"]["items"]["enum"],
        json!(["calculator"])
    );
    let synthesis = &body["properties"]["synthesis"]["enum"];
    assert_eq!(
        synthesis,
        &json!(["auto", "always", "never", true, false, null])
    );
    let put = &doc["paths"]["/api/agents/{name}"]["put"]["requestBody"]["content"]
        ["application/json"]["schema"];
    assert_eq!(put["$ref"], "#/components/schemas/AgentUpdateBody", "{put}");
    let update = &doc["components"]["schemas"]["AgentUpdateBody"];
    assert!(update["properties"].get("name").is_none(), "{update}");
    assert_eq!(update["properties"]["synthesis"]["enum"], *synthesis);
}
