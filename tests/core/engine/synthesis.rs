//! The synthesis: its trace cut at the truncation, and the fallbacks when it fails before or
//! after its first delta.

use super::*;

#[tokio::test]
async fn synthesis_trace_cuts_each_result_at_the_truncation() {
    let llm = Arc::new(ScriptedLlm::native());
    llm.tool_calls(&[("c", "big", "{}")]).text("short");
    let big = "x".repeat(5000);
    let (_, _) = run_simple(llm.clone(), registry(vec![FakeTool::new("big", &big)]), "q").await;
    let trace = &llm.stream_requests()[0].messages[1].content;
    assert!(trace.contains(&"x".repeat(2000)));
    assert!(!trace.contains(&"x".repeat(2001)));
    assert!(trace.contains("truncated 3000 characters"));
}

#[tokio::test]
async fn synthesis_failure_before_any_delta_falls_back_to_the_brief_answer() {
    let llm = Arc::new(ScriptedLlm::native());
    llm.text("brief");
    llm.push_stream(Turn::Fail(LlmError::Timeout(1)));
    let (r, ev) = run_simple(llm, registry(vec![]), "q").await;
    assert_eq!(r.outcome.answer, "brief");
    assert!(r.answer_fallback);
    assert_eq!(
        names(&ev),
        [
            "start",
            "answer:start",
            "answer:delta",
            "answer:done",
            "done"
        ]
    );
    assert!(ev.iter().any(|e| matches!(e, AgentEvent::Answer(AnswerEvent::Done { fallback: true, content }) if content == "brief")));
}

#[tokio::test]
async fn synthesis_failure_after_deltas_resets_then_falls_back() {
    let llm = Arc::new(ScriptedLlm::native());
    llm.text("brief");
    llm.push_stream(Turn::Stream(
        vec!["partial ".into()],
        Some(LlmError::Stream("cut".into())),
    ));
    let (r, ev) = run_simple(llm, registry(vec![]), "q").await;
    assert_eq!(r.outcome.answer, "brief");
    assert_eq!(
        names(&ev),
        [
            "start",
            "answer:start",
            "answer:delta",
            "answer:reset",
            "answer:delta",
            "answer:done",
            "done"
        ]
    );
}
