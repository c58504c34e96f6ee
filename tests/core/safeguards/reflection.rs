//! Self-reflection every six tool calls and the cycle warning on the third identical call.

use super::*;

fn count_containing(msgs: &[Message], needle: &str) -> usize {
    msgs.iter().filter(|m| m.content.contains(needle)).count()
}

#[tokio::test]
async fn reflection_every_six_tool_calls_after_the_results() {
    let llm = Arc::new(ScriptedLlm::native());
    for i in 0..12 {
        llm.tool_calls(&[(&format!("c{i}"), "lookup", &format!(r#"{{"x":"{i}"}}"#))]);
    }
    llm.text("done").text("done, checked");
    let cfg = AgentConfig {
        completion_check: false,
        ..AgentConfig::default()
    };
    let h = Harness::new(
        llm.clone(),
        registry(vec![FakeTool::new("lookup", "v")]),
        Default::default(),
        cfg,
    );
    h.run("find the thing").await;
    let reqs = llm.chat_requests();
    let marker = "Pause and reflect";
    assert_eq!(
        count_containing(&reqs[5].messages, marker),
        0,
        "none before 6 calls"
    );
    assert_eq!(count_containing(&reqs[6].messages, marker), 1);
    assert_eq!(count_containing(&reqs[11].messages, marker), 1);
    assert_eq!(count_containing(&reqs[12].messages, marker), 2);
    let last = reqs[6].messages.last().unwrap();
    assert!(
        last.content.contains("\"find the thing\""),
        "quotes the goal"
    );
    let before = &reqs[6].messages[reqs[6].messages.len() - 2];
    assert_eq!(
        before.role,
        Role::Tool,
        "reflection comes after the tool result"
    );
}

#[tokio::test]
async fn cycle_warning_on_the_third_identical_call_only() {
    let warn = "You have called lookup with identical arguments 3 times and received the same result. Please try a different approach or tool.";
    // Other calls in between: a reply that begins with the call just made ends the loop
    // instead (tests/core/safeguards/repeats.rs).
    let llm = Arc::new(ScriptedLlm::native());
    llm.tool_calls(&[("a", "lookup", r#"{"x":"1","y":2}"#)])
        .tool_calls(&[
            ("n1", "note", r#"{"x":"1"}"#),
            ("b", "lookup", r#"{"y":2, "x":"1"}"#),
        ])
        .tool_calls(&[
            ("n2", "note", r#"{"x":"2"}"#),
            ("c", "lookup", r#"{"x":"1","y":2}"#),
        ])
        .text("done")
        .text("done");
    let h = Harness::new(
        llm.clone(),
        registry(vec![FakeTool::new("lookup", "same"), counter_named("note")]),
        Default::default(),
        AgentConfig::default(),
    );
    h.run("q").await;
    let reqs = llm.chat_requests();
    assert_eq!(
        count_containing(&reqs[2].messages, warn),
        0,
        "two identical calls: no warning"
    );
    assert_eq!(
        count_containing(&reqs[3].messages, warn),
        1,
        "third: exact warning"
    );
    assert_eq!(reqs[3].messages.last().unwrap().content, warn);

    // Different arguments: no warning.
    assert_no_cycle_warning(FakeTool::new("lookup", "same"), |i| {
        format!(r#"{{"x":"{i}"}}"#)
    })
    .await;
}

/// Runs three calls of `tool` (named `lookup`), the `i`-th with arguments `args(i)`, and checks
/// that no request to the LLM carried a cycle warning.
async fn assert_no_cycle_warning(tool: Arc<FakeTool>, args: impl Fn(usize) -> String) {
    let llm = Arc::new(ScriptedLlm::native());
    for i in 0..3 {
        llm.tool_calls(&[(&format!("c{i}"), "lookup", &args(i))]);
    }
    llm.text("done").text("done");
    let h = Harness::new(
        llm.clone(),
        registry(vec![tool]),
        Default::default(),
        AgentConfig::default(),
    );
    h.run("q").await;
    assert!(llm
        .chat_requests()
        .iter()
        .all(|r| count_containing(&r.messages, "identical arguments") == 0));
}

/// Returns a different result on every call.
fn counter() -> Arc<FakeTool> {
    counter_named("lookup")
}

/// `name`, returning a different result on every call.
fn counter_named(name: &str) -> Arc<FakeTool> {
    let n = std::sync::atomic::AtomicUsize::new(0);
    FakeTool::with(name, move |_| {
        n.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
            .to_string()
    })
    .describe("counts")
    .params(json!({"type":"object"}))
    .arc()
}

#[tokio::test]
async fn no_cycle_warning_when_results_differ() {
    assert_no_cycle_warning(counter(), |_| "{}".to_string()).await;
}
