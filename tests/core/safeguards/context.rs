//! The context guard: untouched under budget, compacts over it, one compaction and retry on a
//! context-overflow error, and a failed run when pinned content alone is over the budget.

use super::*;

#[tokio::test]
async fn context_guard_untouched_under_budget_and_compacts_over_it() {
    let llm = Arc::new(ScriptedLlm::native());
    llm.text("ok");
    let (_, ev) = run_simple(llm.clone(), registry(vec![]), "q").await;
    assert!(!ev.iter().any(|e| matches!(e, AgentEvent::Compact(_))));
    assert_eq!(llm.chat_requests().len(), 1);

    let llm = Arc::new(ScriptedLlm::native());
    for i in 0..6 {
        llm.tool_calls(&[(&format!("c{i}"), "big", &format!(r#"{{"x":"{i}"}}"#))]);
    }
    // Scripted replies are consumed in order; summary replies are plain text.
    let cfg = AgentConfig {
        context_budget_tokens: Some(3_000),
        completion_check: false,
        ..AgentConfig::default()
    };
    let tool = FakeTool::new("big", &"word ".repeat(800)); // ~1000 tokens per result
    let h = Harness::new(llm.clone(), registry(vec![tool]), Default::default(), cfg);
    h.queue.push("also check the weather").unwrap();
    for _ in 0..10 {
        llm.text("summary of earlier work");
    }
    let (r, ev) = h.run("the original question").await;
    let compacts: Vec<_> = ev
        .iter()
        .filter(|e| matches!(e, AgentEvent::Compact(_)))
        .collect();
    assert!(!compacts.is_empty(), "over budget → compact event");
    for req in llm.chat_requests() {
        // Pinned query and interrupt survive every compaction; no orphan tool message.
        if req.tools.is_empty() {
            continue; // the summary call itself
        }
        assert!(req
            .messages
            .iter()
            .any(|m| m.content == "the original question"));
        for (i, m) in req.messages.iter().enumerate() {
            if m.role == Role::Tool {
                let owner = req.messages[..i]
                    .iter()
                    .rev()
                    .find(|p| p.role != Role::Tool)
                    .unwrap();
                assert!(
                    owner
                        .tool_calls
                        .iter()
                        .any(|c| Some(&c.id) == m.tool_call_id.as_ref()),
                    "orphan tool message"
                );
            }
        }
    }
    assert!(r
        .messages
        .iter()
        .any(|m| m.content.contains("also check the weather") && m.pinned));
}

#[tokio::test]
async fn context_overflow_error_forces_one_compaction_and_retry() {
    let llm = Arc::new(ScriptedLlm::native());
    llm.push(Turn::Fail(LlmError::ContextLengthExceeded(
        "maximum context length".into(),
    )))
    .text("summary") // may be consumed by the forced compaction's summary call
    .text("answer after compaction");
    let (r, ev) = run_simple(llm.clone(), registry(vec![]), "q").await;
    assert_eq!(
        r.outcome.status,
        RunStatus::Completed,
        "{:?}",
        r.outcome.error
    );
    assert!(ev.iter().any(|e| matches!(e, AgentEvent::Compact(_))));

    let llm = Arc::new(ScriptedLlm::native());
    for _ in 0..3 {
        llm.push(Turn::Fail(LlmError::ContextLengthExceeded(
            "too long".into(),
        )));
    }
    let (r, _) = run_simple(llm.clone(), registry(vec![]), "q").await;
    assert_eq!(r.outcome.status, RunStatus::Failed, "only one forced retry");
}

#[tokio::test]
async fn pinned_content_over_the_budget_fails_the_run_instead_of_compacting_every_iteration() {
    let llm = Arc::new(ScriptedLlm::native());
    for i in 0..20 {
        llm.tool_calls(&[(&format!("c{i}"), "big", "{}")]);
        llm.text("summary");
    }
    let cfg = AgentConfig {
        context_budget_tokens: Some(500),
        completion_check: false,
        ..AgentConfig::default()
    };
    let tool = FakeTool::new("big", "small result");
    let mut h = Harness::new(llm.clone(), registry(vec![tool]), Default::default(), cfg);
    // ~2,500 tokens that compaction must keep: the system prompt is never summarised.
    let agent = Arc::try_unwrap(h.agent).unwrap_or_else(|_| unreachable!("not shared yet"));
    h.agent = Arc::new(agent.with_system_prompt(Some("You are a careful agent. ".repeat(400))));
    let (r, ev) = h.run("the question").await;
    assert_eq!(r.outcome.status, RunStatus::Failed);
    let error = r.outcome.error.clone().unwrap_or_default();
    assert!(error.contains("500-token budget"), "{error}");
    let compacts = ev
        .iter()
        .filter(|e| matches!(e, AgentEvent::Compact(_)))
        .count();
    assert_eq!(
        compacts, 1,
        "one compaction that made no progress, then stop"
    );
    assert!(
        r.outcome.answer.contains("context budget"),
        "{}",
        r.outcome.answer
    );
    assert!(
        llm.chat_requests().len() <= 2,
        "no loop call after the failed compaction"
    );
}
