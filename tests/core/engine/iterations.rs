//! The loop's iterations: an immediate final answer, one tool then the answer in both modes,
//! parallel calls run at once with their results in call order.

use super::*;

#[tokio::test]
async fn immediate_final_answer_runs_one_iteration_and_one_streamed_synthesis() {
    let llm = Arc::new(ScriptedLlm::native());
    llm.text("Paris.");
    llm.push_stream(Turn::Stream(
        vec!["The capital ".into(), "is Paris.".into()],
        None,
    ));
    let (r, ev) = run_simple(
        llm.clone(),
        registry(vec![FakeTool::new("t", "x")]),
        "Capital of France?",
    )
    .await;
    assert_eq!(r.outcome.status, RunStatus::Completed);
    assert_eq!(r.outcome.iterations, 1);
    assert_eq!(r.outcome.tool_calls, 0);
    assert_eq!(r.brief_answer, "Paris.");
    assert_eq!(r.outcome.answer, "The capital is Paris.");
    let kinds: Vec<CallKind> = llm.requests().iter().map(|(k, _)| *k).collect();
    assert_eq!(kinds, [CallKind::Chat, CallKind::Stream]);
    assert_eq!(
        names(&ev),
        [
            "start",
            "answer:start",
            "answer:delta",
            "answer:delta",
            "answer:done",
            "done"
        ]
    );
    assert_eq!(answer_deltas(&ev), "The capital is Paris.");
    // The synthesis prompt holds the question and the draft.
    let synth = &llm.stream_requests()[0];
    assert!(synth.messages[1].content.contains("Capital of France?"));
    assert!(synth.messages[1].content.contains("Paris."));
}

#[tokio::test]
async fn native_one_tool_then_answer() {
    let llm = Arc::new(ScriptedLlm::native());
    llm.tool_calls(&[("c1", "lookup", r#"{"x":"a"}"#)])
        .text("It is 42.");
    let tool = FakeTool::new("lookup", "42");
    let (r, ev) = run_simple(llm.clone(), registry(vec![tool.clone()]), "q").await;
    assert_eq!(r.outcome.status, RunStatus::Completed);
    assert_eq!((r.outcome.iterations, r.outcome.tool_calls), (2, 1));
    assert_eq!(tool.seen(), vec![json!({"x": "a"})]);
    let reqs = llm.chat_requests();
    assert_eq!(reqs[0].tool_choice, Some(ToolChoice::Auto));
    assert_eq!(reqs[0].tools.len(), 1);
    let last = reqs[1].messages.last().unwrap();
    assert_eq!(last.role, Role::Tool);
    assert_eq!(last.tool_call_id.as_deref(), Some("c1"));
    assert_eq!(last.content, "42");
    assert_eq!(
        names(&ev),
        [
            "start",
            // No `thinking` step: the model wrote no text before its call.
            "step:tool_start",
            "step:tool_end",
            "answer:start",
            "answer:delta",
            "answer:delta",
            "answer:done",
            "done"
        ]
    );
    match ev.last().unwrap() {
        AgentEvent::Done(d) => {
            assert_eq!(d.mode, Mode::Native);
            assert_eq!(d.tool_calls, 1);
        }
        other => panic!("last event {other:?}"),
    }
}

#[tokio::test]
async fn json_one_tool_then_answer() {
    let llm = Arc::new(ScriptedLlm::json());
    llm.text(&json_tool("lookup", json!({"x": "a"})))
        .text(&format!("Sure:\n```json\n{}\n```", json_final("42")));
    let tool = FakeTool::new("lookup", "42");
    let (r, ev) = run_simple(llm.clone(), registry(vec![tool.clone()]), "q").await;
    assert_eq!(r.outcome.status, RunStatus::Completed);
    assert_eq!(r.outcome.mode, Mode::Json);
    assert_eq!(r.brief_answer, "42");
    assert_eq!(tool.seen(), vec![json!({"x": "a"})]);
    let reqs = llm.chat_requests();
    assert!(
        reqs[0].tools.is_empty(),
        "JSON mode sends no tools parameter"
    );
    assert_eq!(reqs[0].response_format, Some(ResponseFormat::JsonObject));
    assert!(
        reqs[0].messages[0].content.contains("lookup"),
        "tools described in the system prompt"
    );
    let obs = reqs[1].messages.last().unwrap();
    assert_eq!(
        (obs.role, obs.content.as_str()),
        (Role::User, "Observation: 42")
    );
    assert!(matches!(ev.last(), Some(AgentEvent::Done(d)) if d.mode == Mode::Json));
}

#[tokio::test]
async fn native_parallel_calls_run_concurrently_and_results_follow_in_call_order() {
    let llm = Arc::new(ScriptedLlm::native());
    llm.tool_calls(&[
        ("a", "slow1", "{}"),
        ("b", "slow2", "{}"),
        ("c", "slow3", "{}"),
    ])
    .text("done");
    let d = Duration::from_millis(300);
    let tools = registry(vec![
        FakeTool::slow("slow1", "r1", d),
        FakeTool::slow("slow2", "r2", d),
        FakeTool::slow("slow3", "r3", d),
    ]);
    let t0 = Instant::now();
    let (r, _) = run_simple(llm.clone(), tools, "q").await;
    // Sequential execution would take at least 900 ms; anything below proves concurrency.
    assert!(
        t0.elapsed() < Duration::from_millis(890),
        "took {:?}",
        t0.elapsed()
    );
    assert_eq!(r.outcome.tool_calls, 3);
    let msgs = &llm.chat_requests()[1].messages;
    let n = msgs.len();
    let assistant = &msgs[n - 4];
    assert_eq!(assistant.role, Role::Assistant);
    assert_eq!(assistant.tool_calls.len(), 3);
    let tail: Vec<(Role, Option<&str>, &str)> = msgs[n - 3..]
        .iter()
        .map(|m| (m.role, m.tool_call_id.as_deref(), m.content.as_str()))
        .collect();
    assert_eq!(
        tail,
        [
            (Role::Tool, Some("a"), "r1"),
            (Role::Tool, Some("b"), "r2"),
            (Role::Tool, Some("c"), "r3")
        ]
    );
}
