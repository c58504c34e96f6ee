//! The tool-call limits with their defaults (issue 37, item 5): a reply of 10,000 calls runs at
//! most 32 of them and stays a valid conversation; a flood of replies stops at 200 calls per
//! run and still answers; at most 8 calls of a run execute at once; the synthesis request stays
//! under its byte limit (its cap by the model's prompt budget is unit-tested with the trace).

use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use reagent::agent::context::is_well_formed;
use reagent::llm::ToolCall;
use reagent::tools::{Tool, ToolError, ToolOutput};
use serde_json::Value;

use super::*;

/// `n` native calls of `tool`, ids `p1`, `p2`… with `{"i": k, "p": prefix}` arguments (each
/// reply's calls new, so a flood is not a cycle that the loop stops).
fn calls(prefix: &str, tool: &str, n: usize) -> ChatResponse {
    let calls = (0..n)
        .map(|k| ToolCall {
            id: format!("{prefix}{k}"),
            name: tool.into(),
            arguments: format!(r#"{{"i":{k},"p":"{prefix}"}}"#),
        })
        .collect();
    response("", calls)
}

fn push_reply(llm: &ScriptedLlm, reply: ChatResponse) {
    llm.push(Turn::Reply(reply, Duration::ZERO));
}

fn stream_answer(llm: &ScriptedLlm) {
    llm.push_stream(Turn::Stream(vec!["The answer.".into()], None));
}

fn count(events: &[String], name: &str) -> usize {
    events.iter().filter(|n| *n == name).count()
}

#[tokio::test]
async fn a_reply_of_10000_calls_runs_at_most_32_and_the_run_completes() {
    let llm = Arc::new(ScriptedLlm::native().without_recording());
    push_reply(&llm, calls("c", "t", 10_000));
    // The answer, then again after the completion checklist.
    llm.text("Done.").text("Done.");
    stream_answer(&llm);
    let tool = FakeTool::new("t", "ok");
    let (r, ev) = run_simple(llm.clone(), registry(vec![tool.clone()]), "q").await;
    assert_eq!(tool.call_count(), 32, "only the reply's first 32 calls run");
    assert_eq!(r.outcome.status, RunStatus::Completed);
    assert_eq!(r.outcome.tool_calls, 32);
    assert_eq!(r.outcome.answer, "The answer.");
    let names = names(&ev);
    assert_eq!(count(&names, "step:tool_start"), 32);
    assert_eq!(count(&names, "step:tool_end"), 32);
    assert_eq!(
        count(&names, "step:limit"),
        1,
        "one event says calls were not run"
    );
    assert!(ev.len() < 100, "events stay bounded: {}", ev.len());
    // The history sent next: the reply holds only the calls that ran, each with its result,
    // then one note naming the limit.
    let history = &r.messages;
    assert!(is_well_formed(history));
    let reply = history.iter().find(|m| !m.tool_calls.is_empty()).unwrap();
    assert_eq!(reply.tool_calls.len(), 32);
    assert_eq!(history.iter().filter(|m| m.role == Role::Tool).count(), 32);
    assert!(history
        .iter()
        .any(|m| m.role == Role::User && m.content.contains("9968 were not run")));
}

#[tokio::test]
async fn a_flood_of_replies_stops_at_200_calls_and_answers_with_what_it_has() {
    let llm = Arc::new(ScriptedLlm::native().without_recording());
    for round in 0..20 {
        push_reply(&llm, calls(&format!("r{round}_"), "t", 32));
    }
    stream_answer(&llm);
    let tool = FakeTool::new("t", "ok");
    let (r, ev) = run_simple(llm.clone(), registry(vec![tool.clone()]), "q").await;
    assert_eq!(tool.call_count(), 200, "the run's limit");
    assert_eq!(r.outcome.tool_calls, 200);
    assert_eq!(r.outcome.status, RunStatus::Completed);
    // 6 replies of 32, then 8 of the 7th: no model call after the limit.
    assert_eq!(r.outcome.iterations, 7);
    assert_eq!(llm.remaining(), 13);
    assert!(r.brief_answer.contains("limit of 200 tool calls"));
    assert_eq!(r.outcome.answer, "The answer.");
    let limit = ev
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Step(s) => Some(serde_json::to_value(s).unwrap()),
            _ => None,
        })
        .find(|s| s["type"] == "limit")
        .expect("a limit event");
    assert_eq!(limit["limit"], "tool_calls_per_run");
    assert_eq!(limit["max"], 200);
    assert_eq!(limit["skipped"], 24);
    assert!(is_well_formed(&r.messages));
}

/// Sleeps a little and records how many calls ran at once.
struct Concurrency {
    now: AtomicUsize,
    max: AtomicUsize,
}

#[async_trait]
impl Tool for Concurrency {
    fn name(&self) -> &str {
        "wide"
    }
    fn description(&self) -> &str {
        "records its concurrency"
    }
    fn parameters(&self) -> Value {
        json!({"type": "object"})
    }
    async fn call(&self, _: Value) -> Result<ToolOutput, ToolError> {
        let now = self.now.fetch_add(1, Ordering::SeqCst) + 1;
        self.max.fetch_max(now, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(20)).await;
        self.now.fetch_sub(1, Ordering::SeqCst);
        Ok(ToolOutput::text("ok"))
    }
}

#[tokio::test]
async fn at_most_8_calls_of_a_run_execute_at_once() {
    let llm = Arc::new(ScriptedLlm::native());
    push_reply(&llm, calls("c", "wide", 32));
    llm.text("Done.").text("Done.");
    let tool = Arc::new(Concurrency {
        now: AtomicUsize::new(0),
        max: AtomicUsize::new(0),
    });
    let (r, _) = run_simple(llm.clone(), registry(vec![tool.clone()]), "q").await;
    assert_eq!(r.outcome.tool_calls, 32);
    assert_eq!(
        tool.max.load(Ordering::SeqCst),
        8,
        "the run's share of tool slots"
    );
}

#[tokio::test]
async fn the_synthesis_request_stays_under_its_byte_limit() {
    let llm = Arc::new(ScriptedLlm::native());
    for round in 0..7 {
        push_reply(&llm, calls(&format!("r{round}_"), "big", 32));
    }
    // Not reached with the run's limit (200 calls end the 7th reply); without it, the answer.
    llm.text("Done.").text("Done.");
    stream_answer(&llm);
    // Each result a little over the 2,000 characters the trace keeps of one (and small enough
    // for the history to stay under the context budget: no compaction).
    let tool = FakeTool::new("big", &"x".repeat(2_050));
    let (r, _) = run_simple(llm.clone(), registry(vec![tool.clone()]), "q").await;
    assert_eq!(r.outcome.answer, "The answer.");
    let synth = &llm.stream_requests()[0];
    let trace = &synth.messages[1].content;
    assert!(
        trace.len() <= 256 * 1024 + 256,
        "trace of {} bytes",
        trace.len()
    );
    assert!(trace.contains("steps left out here"), "the cut is marked");
    assert!(trace.starts_with("Original question:\nq\n"));
    assert!(trace.contains("\n1. big("), "the first steps are kept");
    assert!(trace.contains("\n200. big("), "the last steps are kept");
}

#[tokio::test]
async fn arguments_over_1_mib_are_not_run_nor_kept() {
    let llm = Arc::new(ScriptedLlm::native());
    let huge = format!(r#"{{"blob":"{}"}}"#, "a".repeat(2 << 20));
    llm.tool_calls(&[("c1", "t", &huge), ("c2", "t", r#"{"small":1}"#)])
        .text("Done.");
    let tool = FakeTool::new("t", "ok");
    let (r, ev) = run_simple(llm.clone(), registry(vec![tool.clone()]), "q").await;
    assert_eq!(r.outcome.status, RunStatus::Completed);
    assert_eq!(
        tool.seen(),
        vec![json!({"small": 1})],
        "only the small call ran"
    );
    let ends = tool_ends(&ev);
    let StepEvent::ToolEnd { observation, .. } = &ends[0] else {
        unreachable!()
    };
    assert!(
        observation.contains("not run: its arguments were 2097163 bytes"),
        "{observation}"
    );
    // Neither the next request nor the run's trace holds the megabytes.
    let next = &llm.chat_requests()[1];
    let sent: usize = next
        .messages
        .iter()
        .flat_map(|m| m.tool_calls.iter())
        .map(|c| c.arguments.len())
        .sum();
    assert!(sent < 1000, "{sent} bytes of arguments sent back");
    assert!(r.steps.iter().all(|s| s.arguments.to_string().len() < 1000));
}
