//! Engine behaviour through `ReActAgent::run` with a scripted LLM (issue "ReAct engine", tests
//! 1–8 and 16–19). Each test checks what the LLM was sent and what the run emitted.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::support::engine::*;
use crate::support::tools::{registry, FakeTool};
use reagent::agent::events::{AgentEvent, AnswerEvent, StepEvent};
use reagent::agent::hooks::HookRunner;
use reagent::agent::{AgentConfig, Mode, RunStatus};
use reagent::llm::{ChatResponse, LlmError, ResponseFormat, Role, ToolChoice, Usage};
use reagent::testing::scripted::response;
use reagent::testing::{CallKind, ScriptedLlm, Turn};
use serde_json::json;

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
            "step:thinking",
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

#[tokio::test]
async fn json_invalid_then_valid_retries_once_with_reformat_request() {
    let llm = Arc::new(ScriptedLlm::json());
    llm.text("I think the answer is 4").text(&json_final("4"));
    let (r, _) = run_simple(llm.clone(), registry(vec![]), "2+2?").await;
    assert_eq!(r.outcome.status, RunStatus::Completed);
    assert_eq!(r.outcome.iterations, 2);
    assert_eq!(r.brief_answer, "4");
    let second = &llm.chat_requests()[1];
    let last = second.messages.last().unwrap();
    assert!(
        last.content.contains("could not be parsed as valid JSON"),
        "{}",
        last.content
    );
    assert_eq!(
        second.messages[second.messages.len() - 2].content,
        "I think the answer is 4"
    );
}

#[tokio::test]
async fn json_invalid_twice_uses_the_raw_second_reply_as_brief_answer() {
    let llm = Arc::new(ScriptedLlm::json());
    llm.text("not json").text("still not json, but an answer");
    let (r, ev) = run_simple(llm.clone(), registry(vec![]), "q").await;
    assert_eq!(r.outcome.status, RunStatus::Completed);
    assert_eq!(r.outcome.iterations, 2);
    assert_eq!(r.brief_answer, "still not json, but an answer");
    assert!(matches!(ev.last(), Some(AgentEvent::Done(_))));
}

#[tokio::test]
async fn json_missing_type_is_final_and_missing_args_are_empty() {
    let llm = Arc::new(ScriptedLlm::json());
    llm.text(r#"{"type":"tool_call","reasoning":"r","tool_name":"lookup"}"#)
        .text(r#"{"answer":"no type here"}"#);
    let tool = FakeTool::new("lookup", "ok");
    let (r, _) = run_simple(llm, registry(vec![tool.clone()]), "q").await;
    assert_eq!(tool.seen(), vec![json!({})]);
    assert_eq!(r.brief_answer, "no type here");
}

#[tokio::test]
async fn reasoning_content_is_used_when_reasoning_is_empty() {
    let llm = Arc::new(ScriptedLlm::json());
    let mut first = response(
        &json!({"type":"tool_call","reasoning":"","tool_name":"t","tool_args":{}}).to_string(),
        vec![],
    );
    first.reasoning_content = Some("deep thoughts".into());
    llm.push(Turn::Reply(first, Duration::ZERO))
        .text(&json_final("ok"));
    let (_, ev) = run_simple(llm, registry(vec![FakeTool::new("t", "x")]), "q").await;
    let thinking = ev.iter().find_map(|e| match e {
        AgentEvent::Step(StepEvent::Thinking { reasoning, .. }) => Some(reasoning.clone()),
        _ => None,
    });
    assert_eq!(thinking.as_deref(), Some("deep thoughts"));

    // Native: empty content, reasoning_content present.
    let llm = Arc::new(ScriptedLlm::native());
    let mut r = response(
        "",
        vec![reagent::llm::ToolCall {
            id: "c".into(),
            name: "t".into(),
            arguments: "{}".into(),
        }],
    );
    r.reasoning_content = Some("native thoughts".into());
    llm.push(Turn::Reply(r, Duration::ZERO)).text("fine");
    let (_, ev) = run_simple(llm, registry(vec![FakeTool::new("t", "x")]), "q").await;
    assert!(ev.iter().any(|e| matches!(e, AgentEvent::Step(StepEvent::Thinking { reasoning, .. }) if reasoning == "native thoughts")));
}

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
            llm_calls: 4
        }
    );
    assert!(matches!(ev.last(), Some(AgentEvent::Done(d)) if d.usage == r.outcome.usage));
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

#[allow(dead_code)]
fn _unused(_: ChatResponse) {}
