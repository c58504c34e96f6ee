//! Small local models (issue 45): names that are almost a tool's, an unknown tool called again
//! and again, and answers that are tool calls written as text.

use super::*;
use reagent::agent::events::AnswerEvent;

fn tools() -> reagent::tools::ToolRegistry {
    registry(vec![
        FakeTool::new("demo__lookup", "391"),
        FakeTool::new("calculator", "42"),
    ])
}

/// The `answer` events of a run, as `(kind, text)`.
fn answer_events(events: &[AgentEvent]) -> Vec<(&'static str, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Answer(AnswerEvent::Start { .. }) => Some(("start", String::new())),
            AgentEvent::Answer(AnswerEvent::Reset) => Some(("reset", String::new())),
            AgentEvent::Answer(AnswerEvent::Delta { content }) => Some(("delta", content.clone())),
            AgentEvent::Answer(AnswerEvent::Done { content, .. }) => {
                Some(("done", content.clone()))
            }
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_bare_mcp_name_or_a_case_variant_runs_the_tool() {
    let llm = Arc::new(ScriptedLlm::native());
    llm.tool_calls(&[("a", "lookup", "{}")])
        .tool_calls(&[("b", "Calculator", "{}")])
        .text("391 and 42")
        .text("391 and 42");
    let h = Harness::new(
        llm.clone(),
        tools(),
        Default::default(),
        AgentConfig::default(),
    );
    let (result, _) = h.run("q").await;
    let ran: Vec<_> = result
        .steps
        .iter()
        .map(|s| (s.tool.as_str(), s.observation.as_str(), s.error))
        .collect();
    assert_eq!(
        ran,
        [("demo__lookup", "391", false), ("calculator", "42", false)]
    );
}

#[tokio::test]
async fn an_ambiguous_bare_name_is_unknown_and_lists_the_valid_names() {
    let llm = Arc::new(ScriptedLlm::native());
    llm.tool_calls(&[("a", "lookup", "{}")]).text("?").text("?");
    let two = registry(vec![
        FakeTool::new("a__lookup", "1"),
        FakeTool::new("b__lookup", "2"),
    ]);
    let h = Harness::new(llm.clone(), two, Default::default(), AgentConfig::default());
    let (result, _) = h.run("q").await;
    let step = &result.steps[0];
    assert!(step.error);
    assert_eq!(
        step.observation,
        "Error: Unknown tool 'lookup'. Available tools: a__lookup, b__lookup"
    );
}

#[tokio::test]
async fn an_unknown_tool_error_lists_the_callers_tools_too() {
    let llm = Arc::new(ScriptedLlm::native());
    llm.tool_calls(&[("a", "confrim", "{}")])
        .text("?")
        .text("?");
    let one = registry(vec![FakeTool::new("lookup", "1")]);
    let h = Harness::new(llm.clone(), one, Default::default(), AgentConfig::default());
    let confirm = reagent::llm::ToolDefinition {
        name: "confirm".into(),
        description: "Asks the user".into(),
        parameters: serde_json::json!({"type": "object"}),
    };
    let (result, _) = h.run_with_caller_tools("q", vec![confirm]).await;
    let step = &result.steps[0];
    assert!(step.error);
    assert_eq!(
        step.observation,
        "Error: Unknown tool 'confrim'. Available tools: lookup, confirm"
    );
}

#[tokio::test]
async fn an_unknown_tool_called_again_and_again_gets_the_cycle_warning() {
    let llm = Arc::new(ScriptedLlm::native());
    for id in ["a", "b", "c"] {
        llm.tool_calls(&[(id, "web_search", r#"{"q":"x"}"#)]);
    }
    llm.text("done").text("done");
    let h = Harness::new(
        llm.clone(),
        tools(),
        Default::default(),
        AgentConfig::default(),
    );
    h.run("q").await;
    let reqs = llm.chat_requests();
    let warned = |i: usize| {
        reqs[i].messages.iter().any(|m| {
            m.content
                .contains("You have called web_search with identical arguments")
        })
    };
    assert!(!warned(2), "two calls: no warning yet");
    assert!(warned(3), "the third identical unknown call warns");
}

#[tokio::test]
async fn synthesis_that_echoes_tool_calls_gives_the_observations_instead() {
    let llm = Arc::new(ScriptedLlm::native());
    llm.tool_calls(&[("a", "demo__lookup", "{}")])
        .text("It is 391.")
        .text("It is 391.");
    let dump = r#"{"name": "demo__lookup", "arguments": {}}"#;
    llm.push_stream(Turn::Stream(vec![dump.to_string()], None));
    let h = Harness::new(
        llm.clone(),
        tools(),
        Default::default(),
        AgentConfig::default(),
    );
    let (result, events) = h.run("q").await;
    let answer = &result.outcome.answer;
    assert_eq!(
        answer,
        "Here is what the tools returned:\n- demo__lookup: 391"
    );
    let kinds: Vec<_> = answer_events(&events).into_iter().map(|(k, _)| k).collect();
    assert_eq!(kinds, ["start", "delta", "reset", "delta", "done"]);
    assert_eq!(answer_events(&events).last().unwrap().1, *answer);
}

#[tokio::test]
async fn without_synthesis_a_clean_draft_is_the_answer() {
    let llm = Arc::new(ScriptedLlm::native().without_synthesis());
    llm.stream_tool_calls("", &[("a", "demo__lookup", "{}")])
        .stream_text(&["It is 391."]);
    let h = Harness::new(
        llm.clone(),
        tools(),
        Default::default(),
        AgentConfig::default(),
    );
    let (result, _) = h.run("q").await;
    assert_eq!(result.outcome.answer, "It is 391.");
    assert_eq!(result.outcome.usage.llm_calls, 2, "no synthesis call");
    assert!(!result.outcome.synthesis);
}

#[tokio::test]
async fn without_synthesis_a_draft_that_is_a_call_gives_the_observations() {
    let llm = Arc::new(ScriptedLlm::json().without_synthesis());
    let dump = r#"{\"name\": \"demo__lookup\", \"arguments\": {}}"#;
    llm.stream_text(&[r#"{"type": "tool_call", "tool_name": "demo__lookup", "tool_args": {}}"#])
        .stream_text(&[&format!(
            r#"{{"type": "final_answer", "answer": "{dump}"}}"#
        )]);
    let h = Harness::new(
        llm.clone(),
        tools(),
        Default::default(),
        AgentConfig::default(),
    );
    let (result, _) = h.run("q").await;
    assert_eq!(
        result.outcome.answer,
        "Here is what the tools returned:\n- demo__lookup: 391"
    );
    assert_eq!(llm.stream_requests().len(), 2, "no synthesis call");
    assert!(!result.outcome.synthesis);
}

#[tokio::test]
async fn the_json_retry_says_which_key_is_missing_and_what_is_valid() {
    let llm = Arc::new(ScriptedLlm::json());
    llm.text(r#"{"type": "tool_call", "tool_args": {"x": "1"}}"#)
        .text(r#"{"type": "final_answer", "answer": "391"}"#)
        .text(r#"{"type": "final_answer", "answer": "391"}"#);
    let h = Harness::new(
        llm.clone(),
        tools(),
        Default::default(),
        AgentConfig::default(),
    );
    h.run("q").await;
    let reqs = llm.chat_requests();
    let retry = |i: usize| reqs[i].messages.last().unwrap().content.clone();
    let first = retry(1);
    assert!(
        first.contains(r#"it calls a tool but "tool_name" is missing"#),
        "{first}"
    );
    assert!(
        first.contains("Valid tool names: demo__lookup, calculator."),
        "{first}"
    );
    // Nothing to copy back: issue 52's model sent the example of the request it was shown as
    // its next reply (8 of 11 retries).
    assert!(
        !first.contains('{') && !first.contains("example"),
        "{first}"
    );
}

#[tokio::test]
async fn calls_written_one_per_line_and_cut_off_run_the_complete_ones() {
    let llm = Arc::new(ScriptedLlm::native());
    // Issue 45's reply: calls one per line, a bare MCP name, the last one cut by the cap.
    llm.text(
        "{\"name\": \"lookup\", \"arguments\": {}}\n\
         {\"name\": \"calculator\", \"arguments\": {\"x\": \"6*7\"}}\n\
         {\"name\": \"calculator\", \"argu",
    )
    .text("391 and 42")
    .text("391 and 42");
    let h = Harness::new(
        llm.clone(),
        tools(),
        Default::default(),
        AgentConfig::default(),
    );
    let (result, _) = h.run("q").await;
    let ran: Vec<_> = result
        .steps
        .iter()
        .map(|s| (s.tool.as_str(), s.observation.as_str()))
        .collect();
    assert_eq!(ran, [("demo__lookup", "391"), ("calculator", "42")]);
    assert_eq!(result.brief_answer, "391 and 42");
}

#[tokio::test]
async fn the_iteration_cap_answers_with_what_the_tools_returned() {
    // Issue 45's native runs: the right result, then the same call until the cap.
    let llm = Arc::new(ScriptedLlm::native().without_synthesis());
    for i in 0..3 {
        llm.stream_tool_calls("", &[(&format!("c{i}"), "calculator", r#"{"x": "17*23"}"#)]);
    }
    let cfg = AgentConfig {
        max_iterations: 3,
        cycle_detection_threshold: 0,
        ..AgentConfig::default()
    };
    let h = Harness::new(llm.clone(), tools(), Default::default(), cfg);
    let (result, _) = h.run("What is 17 * 23?").await;
    assert_eq!(result.outcome.status, RunStatus::MaxIterations);
    let answer = &result.outcome.answer;
    assert!(
        answer.starts_with("Here is what the tools returned:\n- calculator: 42\n\nI reached"),
        "{answer}"
    );
}

#[tokio::test]
async fn a_reply_of_calls_past_the_cycle_warning_ends_the_loop_with_the_values() {
    // The same call in every reply, another call after it each time (a reply that begins with
    // the call just made ends the loop at once: tests/core/safeguards/repeats.rs); the fourth
    // asks only for the call whose result had come back three times already.
    let llm = Arc::new(ScriptedLlm::native().without_synthesis());
    let same = ("calculator", r#"{"x": "6*7"}"#);
    for id in ["a", "b", "c"] {
        llm.stream_tool_calls("", &[(id, same.0, same.1), ("o", "demo__lookup", "{}")]);
    }
    llm.stream_tool_calls("", &[("d", same.0, same.1), ("e", same.0, same.1)]);
    llm.stream_tool_calls("", &[("f", same.0, same.1)]);
    let h = Harness::new(
        llm.clone(),
        tools(),
        Default::default(),
        AgentConfig::default(),
    );
    let (result, events) = h.run("What is 6 * 7?").await;
    assert_eq!(result.outcome.status, RunStatus::Completed);
    assert_eq!(result.outcome.iterations, 4, "ended after the fourth reply");
    assert_eq!(llm.remaining_streams(), 1);
    let answer = &result.outcome.answer;
    assert!(
        answer.starts_with(
            "Here is what the tools returned:\n- demo__lookup: 391\n- calculator: 42\n\nI stopped"
        ),
        "{answer}"
    );
    assert!(events.iter().any(|e| matches!(
        e,
        AgentEvent::Step(StepEvent::Safeguard {
            kind: reagent::agent::events::SafeguardKind::CycleStop,
            ..
        })
    )));
}

#[tokio::test]
async fn polling_whose_results_change_is_never_stopped() {
    let llm = Arc::new(ScriptedLlm::native().without_synthesis());
    for i in 0..6 {
        llm.stream_tool_calls("", &[(&format!("p{i}"), "status", "{}")]);
    }
    llm.stream_text(&["done"]).stream_text(&["done"]);
    // A job's status, moving on at every poll (the same status twice in a row ends the loop:
    // tests/core/safeguards/repeats.rs).
    let polls = std::sync::atomic::AtomicUsize::new(0);
    let status = FakeTool::with("status", move |_| {
        let i = polls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        ["queued", "running", "20%", "50%", "80%", "done"][i.min(5)].to_string()
    });
    let h = Harness::new(
        llm.clone(),
        registry(vec![status.arc()]),
        Default::default(),
        AgentConfig::default(),
    );
    let (result, _) = h.run("wait for the job").await;
    assert_eq!(result.outcome.status, RunStatus::Completed);
    assert_eq!(result.outcome.tool_calls, 6);
    assert_eq!(result.outcome.answer, "done");
}

#[tokio::test]
async fn a_json_answer_cut_off_twice_is_its_text_not_its_json() {
    let llm = Arc::new(ScriptedLlm::json().without_synthesis());
    let cut = r#"{"type": "final_answer", "answer": "It is 7006652 and 7000000"#;
    llm.text(cut).text(cut);
    let h = Harness::new(
        llm.clone(),
        tools(),
        Default::default(),
        AgentConfig::default(),
    );
    let (result, _) = h.run("What is 1234 * 5678?").await;
    assert_eq!(result.outcome.answer, "It is 7006652 and 7000000");
}
