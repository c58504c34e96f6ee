use chrono::Utc;
use serde::Serialize;
use serde_json::{json, Value};
use uuid::Uuid;

use super::*;
use crate::agent::events::{AnswerEvent, CompactEvent, StartEvent};
use crate::agent::{AgentEvent, Mode, RunStatus};
use crate::domain::{MessageKind, MessageRole};
use crate::server::views;
use crate::testing::schema::{self, check};

mod samples;
use samples::{outcomes, step_type, steps};

fn doc() -> Value {
    document_for(100, &["mock".into()], &["calculator".into()])
}

fn check_component(doc: &Value, name: &str, value: &impl Serialize) {
    let value = serde_json::to_value(value).unwrap();
    if let Err(e) = schema::check_component(doc, name, &value) {
        panic!("{e}");
    }
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
