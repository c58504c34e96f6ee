//! Issue 52's small model in the loop: second replies that begin by repeating the first call
//! and go on with a flood of others (22 of 27; 26 replies ran 5–13 calls), identical calls in
//! one reply, and the reflection cadence counting distinct calls.

use super::*;
use reagent::agent::events::SafeguardKind;
use reagent::llm::Role;

/// The eval's tools, each answering from its arguments so that a repeated call repeats its
/// result: `calculator` the value the issue's trace showed eight times.
fn eval_tools() -> (reagent::tools::ToolRegistry, Vec<Arc<FakeTool>>) {
    let calc = FakeTool::with("calculator", |a| match a["x"].as_str() {
        Some("2400*1.00063") => "2400.1519".into(),
        other => format!("calc({})", other.unwrap_or("")),
    })
    .arc();
    let words = FakeTool::new("word_count", "5");
    let days = FakeTool::new("days_between", "1364");
    let tools: Vec<Arc<dyn Tool>> = vec![calc.clone(), words.clone(), days.clone()];
    (registry(tools), vec![calc, words, days])
}

fn no_checklist() -> AgentConfig {
    AgentConfig {
        completion_check: false,
        ..AgentConfig::default()
    }
}

const FIRST: (&str, &str) = ("calculator", r#"{"x": "2400*1.00063"}"#);

/// The 0.5B model's second reply: the first call again, then nine others (three identical).
fn flood() -> Vec<(&'static str, &'static str, &'static str)> {
    let mut calls = vec![("b0", FIRST.0, r#"{ "x":"2400*1.00063" }"#)];
    for id in ["b1", "b2", "b3"] {
        calls.push((id, "calculator", r#"{"x": "1500"}"#));
    }
    calls.extend([
        ("b4", "word_count", r#"{"x": "five words in this text"}"#),
        ("b5", "days_between", r#"{"x": "2020-01-01/2023-09-26"}"#),
        ("b6", "calculator", r#"{"x": "3*3"}"#),
        ("b7", "word_count", r#"{"x": "other"}"#),
        ("b8", "days_between", r#"{"x": "a/b"}"#),
        ("b9", "calculator", r#"{"x": "7"}"#),
    ]);
    calls
}

#[tokio::test]
async fn a_reply_repeating_the_last_call_with_the_same_result_ends_the_loop() {
    let llm = Arc::new(ScriptedLlm::native().without_synthesis());
    llm.tool_calls(&[("a0", FIRST.0, FIRST.1)]);
    llm.tool_calls(&flood());
    llm.text("not reached");
    let (tools, fakes) = eval_tools();
    let h = Harness::new(
        llm.clone(),
        tools,
        Default::default(),
        AgentConfig::default(),
    );
    let (result, events) = h.run("What is 2400 grown by 0.063 %?").await;

    assert_eq!(result.outcome.status, RunStatus::Completed);
    assert_eq!(result.outcome.iterations, 2, "no third loop call");
    assert_eq!(llm.remaining(), 1);
    assert_eq!(fakes[0].call_count(), 2, "the repeat ran, alone");
    assert_eq!(fakes[1].call_count() + fakes[2].call_count(), 0);
    let answer = &result.outcome.answer;
    assert!(
        answer.starts_with("Here is what the tools returned:\n- calculator: 2400.1519\n\n"),
        "{answer}"
    );
    assert!(events.iter().any(|e| matches!(
        e,
        AgentEvent::Step(StepEvent::Safeguard {
            kind: SafeguardKind::CycleStop,
            tool: Some(t),
            ..
        }) if t == "calculator"
    )));
    // Every call of the reply is answered, right after it (the provider protocol).
    let msgs = &result.messages;
    let at = msgs.iter().position(|m| m.tool_calls.len() == 10).unwrap();
    let answered: Vec<_> = msgs[at + 1..]
        .iter()
        .map(|m| (m.role, m.tool_call_id.clone().unwrap_or_default()))
        .collect();
    let ids: Vec<_> = flood()
        .iter()
        .map(|(id, ..)| (Role::Tool, id.to_string()))
        .collect();
    assert_eq!(answered, ids);
    assert_eq!(msgs[at + 1].content, "2400.1519");
    assert_eq!(
        tool_ends(&events).len(),
        2,
        "the calls not run were never announced"
    );
}

#[tokio::test]
async fn a_copy_in_the_last_place_is_the_last_execution() {
    // The real model's c01 in native mode: a flood ending with copies of its most frequent
    // call, then a reply asking for that call again.
    let llm = Arc::new(ScriptedLlm::native().without_synthesis());
    llm.tool_calls(&[
        ("a0", FIRST.0, FIRST.1),
        ("a1", "word_count", "{}"),
        ("a2", FIRST.0, FIRST.1),
    ])
    .tool_calls(&[("b0", FIRST.0, FIRST.1), ("b1", "days_between", "{}")])
    .text("not reached");
    let (tools, fakes) = eval_tools();
    let h = Harness::new(llm.clone(), tools, Default::default(), no_checklist());
    let (result, _) = h.run("q").await;
    assert_eq!(result.outcome.iterations, 2);
    assert_eq!(fakes[0].call_count(), 2, "once per reply");
    assert_eq!(
        fakes[2].call_count(),
        0,
        "the rest of the reply did not run"
    );
    assert_eq!(llm.remaining(), 1);
}

#[tokio::test]
async fn the_same_rule_holds_in_json_mode() {
    let llm = Arc::new(ScriptedLlm::json().without_synthesis());
    let args: serde_json::Value = serde_json::from_str(FIRST.1).unwrap();
    llm.text(&json_tool("calculator", args.clone()))
        .text(&json_tool("calculator", args))
        .text(&json_final("not reached"));
    let (tools, _) = eval_tools();
    let h = Harness::new(
        llm.clone(),
        tools,
        Default::default(),
        AgentConfig::default(),
    );
    let (result, _) = h.run("q").await;
    assert_eq!(result.outcome.iterations, 2);
    assert_eq!(llm.remaining(), 1);
    assert!(result
        .outcome
        .answer
        .starts_with("Here is what the tools returned:\n- calculator: 2400.1519\n\n"));
}

#[tokio::test]
async fn a_poll_whose_result_changed_runs_the_rest_of_the_reply() {
    let llm = Arc::new(ScriptedLlm::native().without_synthesis());
    llm.tool_calls(&[("a", "status", "{}")])
        .tool_calls(&[("b", "status", "{}"), ("c", "word_count", "{}")])
        .text("done");
    let polls = std::sync::atomic::AtomicUsize::new(0);
    let status = FakeTool::with("status", move |_| {
        ["running", "finished"][polls
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst)
            .min(1)]
        .to_string()
    });
    let words = FakeTool::new("word_count", "5");
    let h = Harness::new(
        llm.clone(),
        registry(vec![status.arc(), words.clone()]),
        Default::default(),
        no_checklist(),
    );
    let (result, _) = h.run("wait, then count").await;
    assert_eq!(words.call_count(), 1);
    assert_eq!(result.outcome.answer, "done");
    assert_eq!(result.outcome.iterations, 3);
}

#[tokio::test]
async fn a_repeat_after_other_calls_is_left_to_cycle_detection() {
    let llm = Arc::new(ScriptedLlm::native().without_synthesis());
    llm.tool_calls(&[("a", FIRST.0, FIRST.1)])
        .tool_calls(&[("b", "word_count", "{}")])
        .tool_calls(&[("c", FIRST.0, FIRST.1)])
        .text("2400.1519");
    let (tools, fakes) = eval_tools();
    let h = Harness::new(llm.clone(), tools, Default::default(), no_checklist());
    let (result, _) = h.run("q").await;
    assert_eq!(fakes[0].call_count(), 2);
    assert_eq!(result.outcome.answer, "2400.1519");
}

#[tokio::test]
async fn identical_calls_in_one_reply_run_once_and_each_gets_its_result() {
    let llm = Arc::new(ScriptedLlm::native().without_synthesis());
    llm.tool_calls(&[
        ("a", "calculator", r#"{"x": "1500"}"#),
        ("b", "word_count", "{}"),
        ("c", "calculator", r#"{ "x" : "1500" }"#),
        ("d", "calculator", r#"{"x": "1500"}"#),
    ])
    .text("1500 and 5");
    let (tools, fakes) = eval_tools();
    let h = Harness::new(
        llm.clone(),
        tools,
        Default::default(),
        AgentConfig::default(),
    );
    let (result, events) = h.run("q").await;
    assert_eq!(fakes[0].call_count(), 1, "three identical calls ran once");
    assert_eq!(
        result.outcome.tool_calls, 4,
        "every call the model asked for"
    );
    // The loop's second call (streamed: `synthesis = "never"`).
    let results: Vec<_> = llm.requests()[1]
        .1
        .messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| (m.tool_call_id.clone().unwrap(), m.content.clone()))
        .collect();
    let want = [
        ("a", "calc(1500)"),
        ("b", "5"),
        ("c", "calc(1500)"),
        ("d", "calc(1500)"),
    ];
    assert_eq!(results, want.map(|(id, r)| (id.to_string(), r.to_string())));
    assert_eq!(tool_ends(&events).len(), 4, "each call id ends");
}

#[tokio::test]
async fn reflection_counts_distinct_calls() {
    // Three calls, the same three again (the first not the last one made), three new ones.
    let llm = Arc::new(ScriptedLlm::native());
    let reply = |ids: [&'static str; 3], x: &'static str| {
        let args = if x == "p" {
            r#"{"x": "p"}"#
        } else {
            r#"{"x": "q"}"#
        };
        [
            (ids[0], "calculator", args),
            (ids[1], "word_count", args),
            (ids[2], "days_between", args),
        ]
    };
    llm.tool_calls(&reply(["a", "b", "c"], "p"))
        .tool_calls(&reply(["d", "e", "f"], "p"))
        .tool_calls(&reply(["g", "h", "i"], "q"))
        .text("done");
    let (tools, _) = eval_tools();
    let h = Harness::new(llm.clone(), tools, Default::default(), no_checklist());
    h.run("q").await;
    let reqs = llm.chat_requests();
    let reflections = |i: usize| {
        reqs[i]
            .messages
            .iter()
            .filter(|m| m.content.contains("Pause and reflect"))
            .count()
    };
    assert_eq!(reflections(2), 0, "six executions, three distinct calls");
    assert_eq!(reflections(3), 1, "the sixth distinct call");
}
