//! Interrupts: when they drain (native and JSON mode), final answers they discard, and a
//! recalled one never reaching the LLM.

use super::*;

fn interrupt_harness(llm: Arc<ScriptedLlm>, msgs: Vec<&'static str>) -> Harness {
    let mut h = Harness::new(
        llm.clone(),
        registry(vec![]),
        Default::default(),
        AgentConfig::default(),
    );
    let queue = h.queue.clone();
    // Pushes the interrupts into the queue when called.
    let work = FakeTool::with("work", move |_| {
        for m in &msgs {
            queue.push(*m).unwrap();
        }
        "worked".into()
    })
    .describe("works")
    .params(json!({"type":"object"}));
    let tools = registry(vec![work.arc()]);
    h.agent = Arc::new(reagent::agent::ReActAgent::new(
        llm,
        tools,
        Default::default(),
        AgentConfig::default(),
    ));
    h
}

/// A harness without tools whose LLM's first reply, `first`, takes 200 ms, and whose queue gets
/// `interrupt` 50 ms in, while that reply is on its way; the test scripts the replies after it.
fn interrupted_mid_reply(llm: &Arc<ScriptedLlm>, first: &str, interrupt: &'static str) -> Harness {
    llm.push(Turn::Reply(
        reagent::testing::scripted::response(first, vec![]),
        Duration::from_millis(200),
    ));
    let h = Harness::new(
        llm.clone(),
        registry(vec![]),
        Default::default(),
        AgentConfig::default(),
    );
    let q = h.queue.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        q.push(interrupt).unwrap();
    });
    h
}

#[tokio::test]
async fn native_interrupts_drain_after_tool_results_as_one_pinned_message() {
    let llm = Arc::new(ScriptedLlm::native());
    llm.tool_calls(&[("c", "work", "{}")]).text("final");
    let h = interrupt_harness(llm.clone(), vec!["first follow-up", "second follow-up"]);
    let (r, ev) = h.run("q").await;
    let msgs = &llm.chat_requests()[1].messages;
    let n = msgs.len();
    assert_eq!(msgs[n - 2].role, Role::Tool);
    let last = &msgs[n - 1];
    assert!(last.pinned && last.content.starts_with("[USER INTERRUPT]"));
    assert!(last.content.contains("first follow-up") && last.content.contains("second follow-up"));
    assert_eq!(r.processed_interrupts.len(), 2);
    let ids = ev.iter().find_map(|e| match e {
        AgentEvent::Step(StepEvent::Interrupt { ids, contents, .. }) => {
            Some((ids.len(), contents.clone()))
        }
        _ => None,
    });
    assert_eq!(
        ids,
        Some((
            2,
            vec![
                "first follow-up".to_string(),
                "second follow-up".to_string()
            ]
        ))
    );
}

#[tokio::test]
async fn json_interrupt_drains_right_after_the_assistant_message_and_discards_a_final_answer() {
    let llm = Arc::new(ScriptedLlm::json());
    let h = interrupted_mid_reply(&llm, &json_final("premature"), "actually, in French");
    llm.text(&json_final("considered the follow-up"));
    let (r, _) = h.run("q").await;
    assert_eq!(r.brief_answer, "considered the follow-up");
    let msgs = &llm.chat_requests()[1].messages;
    let n = msgs.len();
    assert_eq!(msgs[n - 2].role, Role::Assistant);
    assert!(msgs[n - 1].content.starts_with("[USER INTERRUPT]") && msgs[n - 1].pinned);
}

#[tokio::test]
async fn native_final_answer_discarded_when_interrupts_arrived() {
    let llm = Arc::new(ScriptedLlm::native());
    let h = interrupted_mid_reply(&llm, "premature", "one more thing");
    llm.text("with follow-up");
    let (r, _) = h.run("q").await;
    assert_eq!(r.brief_answer, "with follow-up");
    assert_eq!(r.outcome.iterations, 2);
    assert!(r.outcome.unprocessed_interrupts.is_empty());
}

#[tokio::test]
async fn recalled_interrupt_never_reaches_the_llm_and_leftovers_are_reported() {
    let llm = Arc::new(ScriptedLlm::native());
    llm.text("done");
    let h = Harness::new(
        llm.clone(),
        registry(vec![]),
        Default::default(),
        AgentConfig {
            max_iterations: 1,
            ..AgentConfig::default()
        },
    );
    let gone = h.queue.push("recalled").unwrap();
    assert_eq!(
        h.queue.recall(gone.id),
        reagent::agent::interrupts::Recall::Recalled
    );
    // With one iteration, an interrupt that arrives can no longer be processed: reported.
    let slow = Arc::new(ScriptedLlm::native());
    slow.push(Turn::Reply(
        reagent::testing::scripted::response("done", vec![]),
        Duration::from_millis(150),
    ));
    let h2 = Harness::new(
        slow.clone(),
        registry(vec![]),
        Default::default(),
        AgentConfig {
            max_iterations: 1,
            ..AgentConfig::default()
        },
    );
    let q = h2.queue.clone();
    let pusher = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(30)).await;
        q.push("too late").unwrap()
    });
    let (r1, _) = h.run("q").await;
    assert!(llm.chat_requests()[0]
        .messages
        .iter()
        .all(|m| !m.content.contains("recalled")));
    assert!(r1.outcome.unprocessed_interrupts.is_empty());
    let (r2, ev) = h2.run("q").await;
    let pushed = pusher.await.unwrap();
    // The final answer was discarded for it, but no iteration was left: reported unprocessed
    // or processed — never lost.
    let seen = r2
        .processed_interrupts
        .iter()
        .chain(r2.outcome.unprocessed_interrupts.iter())
        .any(|i| i.id == pushed.id);
    assert!(seen);
    assert!(matches!(ev.last(), Some(AgentEvent::Done(_))));
    assert!(
        h2.queue.push("after close").is_err(),
        "queue closed at the end"
    );
}
