//! JSON mode's calls as a list (`{"type": "tool_call", "calls": [...]}`, issue 52's BFCL
//! parallel categories): each call of a reply runs and is a step, as the native mode's calls of
//! one reply are; the caller's calls end the run waiting for all of them; the repeat rule and the
//! per-reply limit apply; a bad call in the list keeps the ones before it.

use reagent::agent::caller_tools::CallerCall;
use reagent::llm::{Message, ToolDefinition};
use serde_json::Value;

use super::*;

/// A `tool_call` action holding `calls` (`(tool, arguments)` each).
fn json_calls(calls: &[(&str, Value)]) -> String {
    let list: Vec<Value> = calls
        .iter()
        .map(|(name, args)| json!({"tool_name": name, "tool_args": args}))
        .collect();
    json!({"type": "tool_call", "calls": list}).to_string()
}

fn steps(ev: &[AgentEvent]) -> Vec<String> {
    tool_ends(ev)
        .iter()
        .map(|s| match s {
            StepEvent::ToolEnd { tool, .. } => tool.clone(),
            _ => unreachable!(),
        })
        .collect()
}

/// The contents of the user messages after the last assistant message of `messages`.
fn after_reply(messages: &[Message]) -> Vec<String> {
    let last = messages.iter().rposition(|m| m.role == Role::Assistant);
    messages[last.map_or(0, |i| i + 1)..]
        .iter()
        .map(|m| {
            assert_eq!(m.role, Role::User, "{m:?}");
            m.content.clone()
        })
        .collect()
}

#[tokio::test]
async fn a_reply_with_two_calls_runs_both_and_each_is_a_step() {
    let llm = Arc::new(ScriptedLlm::json());
    llm.text(&json_calls(&[
        ("weather", json!({"city": "Paris"})),
        ("clock", json!({"zone": "CET"})),
    ]))
    .text(&json_final("Sunny, 10:00"))
    .text(&json_final("Sunny, 10:00"));
    let weather = FakeTool::new("weather", "sunny");
    let clock = FakeTool::new("clock", "10:00");
    let tools = registry(vec![weather.clone(), clock.clone()]);
    let (r, ev) = run_simple(llm.clone(), tools, "weather and time in Paris?").await;
    assert_eq!(r.outcome.status, RunStatus::Completed);
    assert_eq!(weather.seen(), vec![json!({"city": "Paris"})]);
    assert_eq!(clock.seen(), vec![json!({"zone": "CET"})]);
    assert_eq!(r.outcome.tool_calls, 2);
    assert_eq!(steps(&ev), ["weather", "clock"]);
    let second = &llm.chat_requests()[1].messages;
    assert_eq!(
        after_reply(second),
        ["Observation: sunny", "Observation: 10:00"],
        "each result in the order of the calls"
    );
}

#[tokio::test]
async fn the_caller_gets_every_call_of_the_reply() {
    let llm = Arc::new(ScriptedLlm::json());
    llm.text(&json_calls(&[
        ("get_weather", json!({"city": "Paris"})),
        ("get_weather", json!({"city": "Rome"})),
    ]));
    let get_weather = ToolDefinition {
        name: "get_weather".into(),
        description: "The weather of a city".into(),
        parameters: json!({"type": "object", "properties": {"city": {"type": "string"}}}),
    };
    let h = Harness::new(
        llm,
        registry(vec![]),
        HookRunner::default(),
        AgentConfig::default(),
    );
    let (r, _) = h.run_with_caller_tools("q", vec![get_weather]).await;
    assert_eq!(r.outcome.status, RunStatus::RequiresAction);
    let asked: Vec<(String, Value)> = r
        .outcome
        .required_action
        .expect("calls for the caller")
        .tool_calls
        .into_iter()
        .map(
            |CallerCall {
                 name, arguments, ..
             }| (name, serde_json::from_str(&arguments).unwrap()),
        )
        .collect();
    assert_eq!(
        asked,
        [
            ("get_weather".to_string(), json!({"city": "Paris"})),
            ("get_weather".to_string(), json!({"city": "Rome"}))
        ]
    );
}

#[tokio::test]
async fn a_reply_repeating_the_last_call_stops_before_its_other_calls() {
    let llm = Arc::new(ScriptedLlm::json().without_synthesis());
    llm.text(&json_tool("calc", json!({"x": "1+1"})))
        .text(&json_calls(&[
            ("calc", json!({"x": "1+1"})),
            ("calc", json!({"x": "2+2"})),
        ]))
        .text(&json_final("not reached"));
    let calc = FakeTool::new("calc", "2");
    let (r, _) = run_simple(llm.clone(), registry(vec![calc.clone()]), "q").await;
    assert_eq!(r.outcome.status, RunStatus::Completed);
    assert_eq!(calc.call_count(), 2, "the repeat ran, alone");
    assert_eq!(llm.remaining(), 1, "no third loop call");
    // Every call of the reply answered in JSON mode's form: no `tool` message without calls.
    let kept = &r.messages;
    assert!(kept.iter().all(|m| m.role != Role::Tool), "{kept:?}");
    assert!(kept.iter().any(|m| m
        .content
        .starts_with("Observation: Not run: the call before it repeated")));
}

#[tokio::test]
async fn the_calls_past_the_reply_limit_are_not_run_and_the_model_is_told() {
    let llm = Arc::new(ScriptedLlm::json());
    let calls: Vec<(&str, Value)> = (0..3).map(|i| ("t", json!({ "i": i }))).collect();
    llm.text(&json_calls(&calls))
        .text(&json_final("done"))
        .text(&json_final("done"));
    let t = FakeTool::new("t", "ok");
    let cfg = AgentConfig {
        max_tool_calls_per_reply: 2,
        ..AgentConfig::default()
    };
    let h = Harness::new(
        llm.clone(),
        registry(vec![t.clone()]),
        HookRunner::default(),
        cfg,
    );
    let (r, _) = h.run("q").await;
    assert_eq!(r.outcome.status, RunStatus::Completed);
    assert_eq!(t.seen(), vec![json!({"i": 0}), json!({"i": 1})]);
    let told = after_reply(&llm.chat_requests()[1].messages);
    assert_eq!(told.len(), 3, "{told:?}");
    assert!(
        told[2].contains("asked for 3 tool calls; only the first 2"),
        "{told:?}"
    );
}

#[tokio::test]
async fn a_call_without_a_name_keeps_the_calls_before_it() {
    let llm = Arc::new(ScriptedLlm::json());
    let reply = json!({"type": "tool_call", "calls": [
        {"tool_name": "t", "tool_args": {"i": 1}},
        {"tool_args": {"i": 2}},
        {"tool_name": "t", "tool_args": {"i": 3}},
    ]});
    llm.text(&reply.to_string())
        .text(&json_final("done"))
        .text(&json_final("done"));
    let t = FakeTool::new("t", "ok");
    let (r, _) = run_simple(llm, registry(vec![t.clone()]), "q").await;
    assert_eq!(r.outcome.status, RunStatus::Completed);
    assert_eq!(t.seen(), vec![json!({"i": 1})]);
}

#[tokio::test]
async fn the_prompt_offers_calls_as_a_list_and_the_schema_allows_them() {
    let llm = Arc::new(ScriptedLlm::json_schema());
    llm.text(&json_final("v"));
    run_simple(llm.clone(), registry(vec![FakeTool::new("t", "x")]), "q").await;
    let req = &llm.chat_requests()[0];
    let system = &req.messages[0].content;
    // One form for calls, a list: beside a single-call form the model never chose the list.
    let forms: Vec<&str> = system
        .lines()
        .filter(|l| l.starts_with(r#"{"type": "tool_call""#))
        .collect();
    assert_eq!(forms.len(), 1, "{system}");
    assert!(forms[0].contains(r#""calls": [{"tool_name""#), "{system}");
    let Some(ResponseFormat::JsonSchema { schema, .. }) = &req.response_format else {
        panic!("no schema: {:?}", req.response_format);
    };
    let schema: Value = serde_json::from_str(schema.get()).unwrap();
    let several = schema["anyOf"]
        .as_array()
        .unwrap()
        .iter()
        .find(|alt| alt["properties"].get("calls").is_some())
        .expect("an alternative with several calls");
    let item = &several["properties"]["calls"]["items"]["anyOf"][0];
    assert_eq!(item["properties"]["tool_name"], json!({"const": "t"}));
}
