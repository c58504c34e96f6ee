//! What the LLM is sent and the run reports: artifacts hidden from the LLM, usage summed over
//! every call, history before the pinned query.

use super::*;

#[tokio::test]
async fn artifacts_are_hidden_from_the_llm_and_announced_in_the_event() {
    let llm = Arc::new(ScriptedLlm::native());
    llm.tool_calls(&[("c", "report", "{}")])
        .text("see the report");
    let h = Harness::new(
        llm.clone(),
        registry(vec![FakeTool::text(
            "report",
            "<html><body>report</body></html>",
        )
        .describe("A misbehaving test tool.")
        .params(json!({"type": "object"}))
        .artifact(
            "report.html",
            "text/html",
            b"<html><body>report</body></html>",
        )
        .arc()]),
        HookRunner::default(),
        AgentConfig::default(),
    );
    let (_, ev) = h.run("q").await;
    let tool_msg = llm.chat_requests()[1]
        .messages
        .last()
        .unwrap()
        .content
        .clone();
    assert_eq!(tool_msg, "[Artifact generated: report.html] The content is rendered as a preview in the UI and available for download. Do not reproduce its source in your answer.");
    let end = tool_ends(&ev).pop().unwrap();
    let StepEvent::ToolEnd {
        artifacts,
        observation,
        ..
    } = end
    else {
        unreachable!()
    };
    assert_eq!(observation, tool_msg);
    assert_eq!(artifacts.len(), 1);
    assert_eq!(artifacts[0].name, "report.html");
    assert_eq!(
        artifacts[0].url,
        format!("/api/artifacts/{}", artifacts[0].id)
    );
    assert!(h.artifacts.get(&artifacts[0].id).is_some());
}

#[tokio::test]
async fn usage_sums_every_call_of_the_run() {
    // 15 tools → selection call; one tool iteration; final; synthesis = 4 calls.
    let llm = Arc::new(ScriptedLlm::native());
    llm.tool_calls(&[("s", "select_tools", r#"{"tools":["t0","t1"]}"#)])
        .tool_calls(&[("c", "t0", "{}")])
        .text("done");
    let tools: Vec<Arc<dyn reagent::tools::Tool>> = (0..15)
        .map(|i| FakeTool::new(&format!("t{i}"), "r") as Arc<dyn reagent::tools::Tool>)
        .collect();
    let (r, ev) = run_simple(llm.clone(), registry(tools), "q").await;
    assert_eq!(llm.requests().len(), 4);
    assert_eq!(
        r.outcome.usage,
        Usage {
            prompt_tokens: 40,
            completion_tokens: 20,
            total_tokens: 60,
            llm_calls: 4,
            ..Usage::default()
        }
    );
    assert!(matches!(ev.last(), Some(AgentEvent::Done(d)) if d.usage == r.outcome.usage));
}

#[tokio::test]
async fn history_is_sent_before_the_pinned_query() {
    use reagent::agent::{InterruptQueue, ReActAgent, RunHandles, RunInput};
    use reagent::llm::Message;
    let llm = Arc::new(ScriptedLlm::native());
    llm.text("ok");
    let agent = ReActAgent::new(
        llm.clone(),
        registry(vec![]),
        HookRunner::default(),
        AgentConfig::default(),
    );
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let handles = RunHandles {
        checkpoints: None,
        events: tx.into(),
        interrupts: Arc::new(InterruptQueue::new()),
        cancel: Default::default(),
        artifacts: Arc::new(reagent::agent::artifacts::MemoryArtifacts::new()),
        tool_slots: Default::default(),
    };
    let input = RunInput {
        run_id: "r".into(),
        conversation_id: "c".into(),
        query: "and now?".into(),
        history: vec![
            Message::user("first question"),
            Message::assistant("first answer"),
        ],
        model_name: Some("friendly-name".into()),
        client_tools: Vec::new(),
        images: Vec::new(),
    };
    let (tx2, mut rx2) = tokio::sync::mpsc::unbounded_channel();
    let handles = RunHandles {
        checkpoints: None,
        events: tx2.into(),
        ..handles
    };
    agent.run(input, handles).await;
    match rx2.try_recv() {
        Ok(reagent::agent::AgentEvent::Start(s)) => assert_eq!(s.model, "friendly-name"),
        other => panic!("first event {other:?}"),
    }
    let msgs = &llm.chat_requests()[0].messages;
    let contents: Vec<&str> = msgs[1..].iter().map(|m| m.content.as_str()).collect();
    assert_eq!(contents, ["first question", "first answer", "and now?"]);
    assert!(msgs[3].pinned);
}
