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
