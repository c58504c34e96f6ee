//! How a run ends: tool failures as observations, max iterations, a cancel during a slow tool,
//! an LLM failure.

use super::*;

#[tokio::test]
async fn tool_failures_become_error_observations_and_the_run_completes() {
    let llm = Arc::new(ScriptedLlm::native());
    llm.tool_calls(&[
        ("1", "nope", "{}"),
        ("2", "failing", "{}"),
        ("3", "panicking", "{}"),
        ("4", "sleepy", "{}"),
        ("5", "lookup", "{not json"),
    ])
    .text("recovered")
    .text("recovered, checked"); // 3 tools ran: the completion checklist asks once more
    let tools = registry(vec![
        FakeTool::failing("failing", "disk on fire")
            .describe("A misbehaving test tool.")
            .params(json!({"type": "object"}))
            .arc(),
        FakeTool::panicking("panicking")
            .describe("A misbehaving test tool.")
            .params(json!({"type": "object"}))
            .arc(),
        FakeTool::text("sleepy", "late")
            .delay(Duration::from_secs(30))
            .timeout(Duration::from_millis(100))
            .describe("A misbehaving test tool.")
            .params(json!({"type": "object"}))
            .arc(),
        FakeTool::new("lookup", "x"),
    ]);
    let t0 = Instant::now();
    let (r, ev) = run_simple(llm.clone(), tools, "q").await;
    assert!(t0.elapsed() < Duration::from_secs(10));
    assert_eq!(r.outcome.status, RunStatus::Completed);
    let obs: Vec<String> = llm.chat_requests()[1]
        .messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.content.clone())
        .collect();
    assert!(
        obs[0].starts_with(
            "Error: Unknown tool 'nope'. Available tools: failing, panicking, sleepy, lookup"
        ),
        "{}",
        obs[0]
    );
    assert!(obs[1].contains("disk on fire"), "{}", obs[1]);
    assert!(
        obs[2].contains("crashed") && obs[2].contains("tool exploded"),
        "{}",
        obs[2]
    );
    assert!(obs[3].contains("timed out"), "{}", obs[3]);
    assert!(obs[4].contains("not valid JSON"), "{}", obs[4]);
    assert!(tool_ends(&ev)
        .iter()
        .all(|e| matches!(e, StepEvent::ToolEnd { error: true, .. })));
}

#[tokio::test]
async fn max_iterations_gives_a_step_summary_and_status() {
    let llm = Arc::new(ScriptedLlm::native());
    for i in 0..3 {
        llm.tool_calls(&[(&format!("c{i}"), "lookup", &format!(r#"{{"x":"{i}"}}"#))]);
    }
    let cfg = AgentConfig {
        max_iterations: 3,
        ..AgentConfig::default()
    };
    let h = Harness::new(
        llm.clone(),
        registry(vec![FakeTool::new("lookup", "v")]),
        HookRunner::default(),
        cfg,
    );
    let (r, ev) = h.run("q").await;
    assert_eq!(r.outcome.status, RunStatus::MaxIterations);
    assert_eq!(r.outcome.iterations, 3);
    assert!(
        r.brief_answer.contains("limit of 3 iterations"),
        "{}",
        r.brief_answer
    );
    assert_eq!(r.brief_answer.matches("lookup — succeeded").count(), 3);
    assert_eq!(llm.stream_requests().len(), 1, "synthesis still runs");
    assert!(matches!(ev.last(), Some(AgentEvent::Done(d)) if d.status == RunStatus::MaxIterations));
}

#[tokio::test]
async fn cancel_during_a_slow_tool_gives_synthetic_results_and_cancelled_status() {
    let llm = Arc::new(ScriptedLlm::native());
    llm.tool_calls(&[("fast", "quick", "{}"), ("slow", "sloth", "{}")]);
    let tools = registry(vec![
        FakeTool::new("quick", "fast result"),
        FakeTool::slow("sloth", "never", Duration::from_secs(30)),
    ]);
    let h = Harness::new(
        llm.clone(),
        tools,
        HookRunner::default(),
        AgentConfig::default(),
    );
    let cancel = h.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        cancel.cancel();
    });
    let t0 = Instant::now();
    let (r, ev) = h.run("q").await;
    assert!(t0.elapsed() < Duration::from_secs(5));
    assert_eq!(r.outcome.status, RunStatus::Cancelled);
    // History stays valid: the assistant tool_calls message is followed by both results.
    let n = r.messages.len();
    assert_eq!(r.messages[n - 3].tool_calls.len(), 2);
    assert_eq!(r.messages[n - 2].content, "fast result");
    assert_eq!(
        r.messages[n - 1].content,
        "[cancelled: tool execution did not complete]"
    );
    assert_eq!(r.messages[n - 1].tool_call_id.as_deref(), Some("slow"));
    assert!(matches!(ev.last(), Some(AgentEvent::Done(d)) if d.status == RunStatus::Cancelled));
    assert!(
        llm.stream_requests().is_empty(),
        "no synthesis call for a cancelled run"
    );
}

#[tokio::test]
async fn llm_failure_fails_the_run_with_an_answer() {
    let llm = Arc::new(ScriptedLlm::native());
    llm.push(Turn::Fail(LlmError::Status {
        status: 500,
        body: "boom".into(),
    }));
    let (r, ev) = run_simple(llm, registry(vec![]), "q").await;
    assert_eq!(r.outcome.status, RunStatus::Failed);
    assert!(r.outcome.error.as_deref().unwrap().contains("500"));
    assert!(r.outcome.answer.contains("could not complete"));
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
    assert!(
        matches!(ev.last(), Some(AgentEvent::Done(d)) if d.error.is_some() && d.status == RunStatus::Failed)
    );
}
