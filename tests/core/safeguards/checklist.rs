//! The completion checklist: once with three tools, never with two or when disabled, and the
//! loop resumes when the LLM answers it with a tool call.

use super::*;

async fn run_with_tools(
    n_tools: usize,
    cfg: AgentConfig,
    after_check: &[&str],
) -> (Arc<ScriptedLlm>, reagent::agent::AgentResult) {
    let llm = Arc::new(ScriptedLlm::native());
    for i in 0..n_tools {
        llm.tool_calls(&[(&format!("c{i}"), "lookup", &format!(r#"{{"x":"{i}"}}"#))]);
    }
    llm.text("first final");
    for t in after_check {
        if *t == "TOOL" {
            llm.tool_calls(&[("again", "lookup", r#"{"x":"again"}"#)]);
        } else {
            llm.text(t);
        }
    }
    let h = Harness::new(
        llm.clone(),
        registry(vec![FakeTool::new("lookup", "v")]),
        Default::default(),
        cfg,
    );
    let (r, _) = h.run("q").await;
    (llm, r)
}

#[tokio::test]
async fn checklist_once_with_three_tools() {
    let (llm, r) = run_with_tools(3, AgentConfig::default(), &["the checked final"]).await;
    assert_eq!(r.brief_answer, "the checked final");
    let reqs = llm.chat_requests();
    assert_eq!(reqs.len(), 5);
    assert!(reqs[4]
        .messages
        .last()
        .unwrap()
        .content
        .contains("verify your answer"));
    assert_eq!(
        reqs[4].messages[reqs[4].messages.len() - 2].content,
        "first final"
    );
}

#[tokio::test]
async fn checklist_never_with_two_tools_or_when_disabled() {
    let (llm, r) = run_with_tools(2, AgentConfig::default(), &[]).await;
    assert_eq!(r.brief_answer, "first final");
    assert_eq!(llm.chat_requests().len(), 3);
    let cfg = AgentConfig {
        completion_check: false,
        ..AgentConfig::default()
    };
    let (llm, r) = run_with_tools(3, cfg, &[]).await;
    assert_eq!(r.brief_answer, "first final");
    assert_eq!(llm.chat_requests().len(), 4);
}

#[tokio::test]
async fn checklist_resumes_the_loop_when_the_llm_calls_a_tool() {
    let (llm, r) = run_with_tools(
        3,
        AgentConfig::default(),
        &["TOOL", "final after more work"],
    )
    .await;
    assert_eq!(r.brief_answer, "final after more work");
    assert_eq!(r.outcome.tool_calls, 4);
    assert_eq!(llm.chat_requests().len(), 6, "checklist only once");
    assert_eq!(llm.remaining(), 0);
}

#[tokio::test]
async fn a_verdict_on_the_checklist_keeps_the_answer_it_checked() {
    let (llm, r) = run_with_tools(
        3,
        AgentConfig::default(),
        &["Yes, the answer is fully correct and complete."],
    )
    .await;
    assert_eq!(r.brief_answer, "first final");
    assert_eq!(llm.chat_requests().len(), 5);
    let trace = &llm.stream_requests()[0].messages[1].content;
    assert!(
        trace.contains("first final") && !trace.contains("fully correct"),
        "the synthesis drafts from the checked answer: {trace}"
    );
}
