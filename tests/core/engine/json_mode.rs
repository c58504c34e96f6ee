//! JSON mode's replies: one reformat retry, the raw second reply as the brief answer, missing
//! fields, reasoning content standing in for an empty reasoning.

use super::*;

#[tokio::test]
async fn json_invalid_then_valid_retries_once_with_reformat_request() {
    let llm = Arc::new(ScriptedLlm::json());
    llm.text("I think the answer is 4").text(&json_final("4"));
    let (r, _) = run_simple(llm.clone(), registry(vec![]), "2+2?").await;
    assert_eq!(r.outcome.status, RunStatus::Completed);
    assert_eq!(r.outcome.iterations, 2);
    assert_eq!(r.brief_answer, "4");
    let second = &llm.chat_requests()[1];
    let last = second.messages.last().unwrap();
    assert!(
        last.content
            .contains("could not be used: it is not a JSON object. Valid tool names: (none)."),
        "{}",
        last.content
    );
    assert_eq!(
        second.messages[second.messages.len() - 2].content,
        "I think the answer is 4"
    );
}

#[tokio::test]
async fn json_invalid_twice_uses_the_raw_second_reply_as_brief_answer() {
    let llm = Arc::new(ScriptedLlm::json());
    llm.text("not json").text("still not json, but an answer");
    let (r, ev) = run_simple(llm.clone(), registry(vec![]), "q").await;
    assert_eq!(r.outcome.status, RunStatus::Completed);
    assert_eq!(r.outcome.iterations, 2);
    assert_eq!(r.brief_answer, "still not json, but an answer");
    assert!(matches!(ev.last(), Some(AgentEvent::Done(_))));
}

#[tokio::test]
async fn json_missing_type_is_final_and_missing_args_are_empty() {
    let llm = Arc::new(ScriptedLlm::json());
    llm.text(r#"{"type":"tool_call","reasoning":"r","tool_name":"lookup"}"#)
        .text(r#"{"answer":"no type here"}"#);
    let tool = FakeTool::new("lookup", "ok");
    let (r, _) = run_simple(llm, registry(vec![tool.clone()]), "q").await;
    assert_eq!(tool.seen(), vec![json!({})]);
    assert_eq!(r.brief_answer, "no type here");
}

#[tokio::test]
async fn reasoning_content_is_used_when_reasoning_is_empty() {
    let llm = Arc::new(ScriptedLlm::json());
    let mut first = response(
        &json!({"type":"tool_call","reasoning":"","tool_name":"t","tool_args":{}}).to_string(),
        vec![],
    );
    first.reasoning_content = Some("deep thoughts".into());
    llm.push(Turn::Reply(first, Duration::ZERO))
        .text(&json_final("ok"));
    let (_, ev) = run_simple(llm, registry(vec![FakeTool::new("t", "x")]), "q").await;
    let thinking = ev.iter().find_map(|e| match e {
        AgentEvent::Step(StepEvent::Thinking { reasoning, .. }) => Some(reasoning.clone()),
        _ => None,
    });
    assert_eq!(thinking.as_deref(), Some("deep thoughts"));

    // Native: empty content, reasoning_content present.
    let llm = Arc::new(ScriptedLlm::native());
    let mut r = response(
        "",
        vec![reagent::llm::ToolCall {
            id: "c".into(),
            name: "t".into(),
            arguments: "{}".into(),
        }],
    );
    r.reasoning_content = Some("native thoughts".into());
    llm.push(Turn::Reply(r, Duration::ZERO)).text("fine");
    let (_, ev) = run_simple(llm, registry(vec![FakeTool::new("t", "x")]), "q").await;
    assert!(ev.iter().any(|e| matches!(e, AgentEvent::Step(StepEvent::Thinking { reasoning, .. }) if reasoning == "native thoughts")));
}

#[tokio::test]
async fn the_action_names_its_tool_before_any_reasoning() {
    // Issue 52: with the free-text `reasoning` first, 10 of 30 first replies of a 0.5B model
    // were a plan with no tool name.
    let llm = Arc::new(ScriptedLlm::json());
    llm.text(&json_final("4"));
    run_simple(llm.clone(), registry(vec![FakeTool::new("t", "x")]), "q").await;
    let system = llm.chat_requests()[0].messages[0].content.clone();
    let form = system
        .lines()
        .find(|l| l.contains(r#""type": "tool_call""#))
        .expect("the tool-call form");
    let at = |k: &str| form.find(k).unwrap_or(usize::MAX);
    assert!(at(r#""type""#) < at(r#""tool_name""#), "{form}");
    assert!(at(r#""tool_name""#) < at(r#""tool_args""#), "{form}");
    assert!(at(r#""tool_args""#) < at(r#""reasoning""#), "{form}");
}

#[tokio::test]
async fn json_schema_models_get_a_schema_that_allows_only_the_runs_tools() {
    let llm = Arc::new(ScriptedLlm::json_schema());
    llm.text(&json_tool("lookup", json!({"x": "1"})))
        .text(&json_final("v"));
    let tools = registry(vec![
        FakeTool::new("lookup", "v"),
        FakeTool::new("calc", "2"),
    ]);
    run_simple(llm.clone(), tools, "q").await;
    for req in llm.chat_requests() {
        let Some(ResponseFormat::JsonSchema { name, schema }) = &req.response_format else {
            panic!("no schema: {:?}", req.response_format);
        };
        assert_eq!(*name, "action");
        let schema: serde_json::Value = serde_json::from_str(schema.get()).unwrap();
        let alts = schema["anyOf"].as_array().unwrap();
        let calls = alts[0]["properties"]["calls"]["items"]["anyOf"]
            .as_array()
            .unwrap();
        let allowed: Vec<&str> = calls
            .iter()
            .map(|c| c["properties"]["tool_name"]["const"].as_str().unwrap())
            .collect();
        assert_eq!(allowed, ["lookup", "calc"]);
        assert_eq!(
            alts[1]["properties"]["type"]["const"].as_str(),
            Some("final_answer")
        );
        assert_eq!(alts.len(), 2);
    }
    // A model with only `json_mode` asks for JSON, as before.
    let plain = Arc::new(ScriptedLlm::json());
    plain.text(&json_final("v"));
    run_simple(plain.clone(), registry(vec![]), "q").await;
    assert_eq!(
        plain.chat_requests()[0].response_format,
        Some(ResponseFormat::JsonObject)
    );
}

#[tokio::test]
async fn a_refused_schema_falls_back_to_json_for_the_rest_of_the_run() {
    // llama-server answers 400 to a schema its grammar converter cannot take.
    let llm = Arc::new(ScriptedLlm::json_schema());
    let refused = LlmError::Status {
        status: 400,
        body: "JSON schema error at #/properties/a: cannot resolve $ref".into(),
    };
    llm.push(Turn::Fail(refused))
        .text(&json_tool("lookup", json!({"x": "1"})))
        .text(&json_final("v"));
    let (r, _) = run_simple(
        llm.clone(),
        registry(vec![FakeTool::new("lookup", "v")]),
        "q",
    )
    .await;
    assert_eq!(r.outcome.status, RunStatus::Completed);
    assert_eq!(r.brief_answer, "v");
    let formats: Vec<_> = llm
        .chat_requests()
        .iter()
        .map(|q| matches!(q.response_format, Some(ResponseFormat::JsonSchema { .. })))
        .collect();
    assert_eq!(formats, [true, false, false]);
    assert_eq!(
        llm.chat_requests()[2].response_format,
        Some(ResponseFormat::JsonObject)
    );
}

#[tokio::test]
async fn an_action_cut_off_by_the_output_cap_is_asked_for_again() {
    // Issue 52 (c01, m22): the reasoning ran to the cap; the reply became the answer, as JSON.
    let llm = Arc::new(ScriptedLlm::json());
    let cut = r#"{"type": "tool_call", "tool_name": "calc", "tool_args": {"x": "1234 * 5678"}, "reasoning": "Observation: 1234 * 5678 = 700000000000"#;
    llm.text(cut)
        .text(&json_tool("calc", json!({"x": "1234 * 5678"})))
        .text(&json_final("7006652"));
    let calc = FakeTool::new("calc", "7006652");
    let (r, _) = run_simple(llm.clone(), registry(vec![calc.clone()]), "q").await;
    assert_eq!(calc.call_count(), 1);
    assert_eq!(r.brief_answer, "7006652");
    let retry = llm.chat_requests()[1]
        .messages
        .last()
        .unwrap()
        .content
        .clone();
    assert!(retry.contains("cut off"), "{retry}");
}
