//! Sloppy real models (issue 22) and provider ids (issue 16 item 2) through `ReActAgent::run`:
//! tool calls written in the content in native mode, the action aliases of JSON mode, the
//! near-misses that must stay answers in both, and `call_id` unique within a run.

use std::sync::Arc;

use crate::support::engine::*;
use crate::support::tools::{registry, FakeTool};
use reagent::agent::events::{AgentEvent, StepEvent};
use reagent::agent::{AgentResult, RunStatus};
use reagent::llm::Role;
use reagent::testing::ScriptedLlm;
use serde_json::json;

fn call_ids(events: &[AgentEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Step(StepEvent::ToolStart { call_id, .. }) => Some(call_id.clone()),
            _ => None,
        })
        .collect()
}

/// Runs `llm` answering `content` beside a `lookup` tool and checks that `content` stays the
/// final answer (one iteration, no tool called); the result, for more checks.
async fn assert_stays_the_answer(llm: ScriptedLlm, content: &str) -> AgentResult {
    let llm = Arc::new(llm);
    llm.text(content);
    let tool = FakeTool::new("lookup", "42");
    let (r, _) = run_simple(llm.clone(), registry(vec![tool.clone()]), "q").await;
    assert_eq!(
        (r.outcome.iterations, r.outcome.tool_calls),
        (1, 0),
        "{content}"
    );
    assert_eq!(r.brief_answer, content);
    assert_eq!(tool.call_count(), 0, "{content}");
    r
}

#[tokio::test]
async fn native_a_call_written_as_content_runs_and_is_stored_as_tool_calls() {
    let llm = Arc::new(ScriptedLlm::native());
    // What Qwen2.5-Coder-0.5B answers under llama.cpp --jinja.
    llm.text(r#"{"name": "lookup", "arguments": {"x": "a"}}"#)
        .text("It is 42.");
    let tool = FakeTool::new("lookup", "42");
    let (r, ev) = run_simple(llm.clone(), registry(vec![tool.clone()]), "q").await;
    assert_eq!(r.outcome.status, RunStatus::Completed);
    assert_eq!((r.outcome.iterations, r.outcome.tool_calls), (2, 1));
    assert_eq!(tool.seen(), vec![json!({"x": "a"})]);
    assert_eq!(r.brief_answer, "It is 42.");
    assert_eq!(call_ids(&ev), ["call_1_1"]);
    // The history the provider sees next is the normal tool_calls form, not the text.
    let reqs = llm.chat_requests();
    let msgs = &reqs[1].messages;
    let assistant = &msgs[msgs.len() - 2];
    assert_eq!(assistant.role, Role::Assistant);
    assert_eq!(assistant.content, "");
    assert_eq!(assistant.tool_calls.len(), 1);
    assert_eq!(assistant.tool_calls[0].id, "call_1_1");
    assert_eq!(assistant.tool_calls[0].name, "lookup");
    let result = msgs.last().unwrap();
    assert_eq!(result.role, Role::Tool);
    assert_eq!(result.tool_call_id.as_deref(), Some("call_1_1"));
    assert_eq!(result.content, "42");
}

#[tokio::test]
async fn native_hermes_blocks_run_as_parallel_calls() {
    let llm = Arc::new(ScriptedLlm::native());
    llm.text(
        "<tool_call>\n{\"name\": \"a\", \"arguments\": {\"x\": \"1\"}}\n</tool_call>\n\
         <tool_call>\n{\"name\": \"b\", \"arguments\": \"{\\\"x\\\": \\\"2\\\"}\"}\n</tool_call>",
    )
    .text("done");
    let (a, b) = (FakeTool::new("a", "A"), FakeTool::new("b", "B"));
    let (r, ev) = run_simple(llm.clone(), registry(vec![a.clone(), b.clone()]), "q").await;
    assert_eq!((r.outcome.iterations, r.outcome.tool_calls), (2, 2));
    assert_eq!(a.seen(), vec![json!({"x": "1"})]);
    assert_eq!(b.seen(), vec![json!({"x": "2"})]);
    assert_eq!(call_ids(&ev), ["call_1_1", "call_1_2"]);
}

#[tokio::test]
async fn native_near_misses_stay_the_final_answer() {
    for content in [
        r#"{"name": "web_search", "arguments": {"q": "x"}}"#,
        r#"Calling {"name": "lookup", "arguments": {"x": "a"}} now."#,
        "Example:\n```python\nd = {\"name\": \"lookup\", \"arguments\": {}}\n```",
        r#"{"name": "lookup", "version": 2}"#,
    ] {
        let r = assert_stays_the_answer(ScriptedLlm::native(), content).await;
        assert_eq!(r.outcome.status, RunStatus::Completed, "{content}");
    }
}

#[tokio::test]
async fn json_mode_action_aliases_drive_the_loop() {
    let llm = Arc::new(ScriptedLlm::json());
    llm.text(r#"{"action": "lookup", "action_input": "a"}"#)
        .text(r#"{"tool": "lookup", "args": {"x": "b"}}"#)
        .text(r#"{"action": "Final Answer", "action_input": "It is 42."}"#);
    let tool = FakeTool::new("lookup", "42");
    let (r, ev) = run_simple(llm.clone(), registry(vec![tool.clone()]), "q").await;
    assert_eq!(r.outcome.status, RunStatus::Completed);
    assert_eq!((r.outcome.iterations, r.outcome.tool_calls), (3, 2));
    // FakeTool has the one parameter `x`: a bare action_input goes there.
    assert_eq!(tool.seen(), vec![json!({"x": "a"}), json!({"x": "b"})]);
    assert_eq!(r.brief_answer, "It is 42.");
    assert_eq!(call_ids(&ev), ["call_1_1", "call_2_1"]);
}

#[tokio::test]
async fn json_mode_near_misses_stay_the_final_answer() {
    for content in [
        r#"{"name": "web_search", "arguments": {"q": "x"}}"#,
        "Use a dict:\n```python\nperson = {\"name\": \"Bob\", \"age\": 3}\n```",
    ] {
        assert_stays_the_answer(ScriptedLlm::json(), content).await;
    }
}

#[tokio::test]
async fn a_provider_id_reused_in_a_later_iteration_is_renamed() {
    // Our own mock provider does this after a follow-up (issue 16 item 2): the UI folded the
    // cards of every call with the same id into one.
    let llm = Arc::new(ScriptedLlm::native());
    llm.tool_calls(&[("call_0", "lookup", r#"{"x":"1"}"#)])
        .tool_calls(&[("call_0", "lookup", r#"{"x":"2"}"#)])
        .tool_calls(&[
            ("call_0", "lookup", r#"{"x":"3"}"#),
            ("call_0", "lookup", r#"{"x":"4"}"#),
        ])
        .text("done");
    let tool = FakeTool::new("lookup", "42");
    let (r, ev) = run_simple(llm.clone(), registry(vec![tool]), "q").await;
    assert_eq!(r.outcome.tool_calls, 4);
    let ids = ["call_0", "call_0_2", "call_0_3", "call_0_4"];
    assert_eq!(call_ids(&ev), ids);
    let ends: Vec<String> = tool_ends(&ev)
        .into_iter()
        .filter_map(|e| match e {
            StepEvent::ToolEnd { call_id, .. } => Some(call_id),
            _ => None,
        })
        .collect();
    assert_eq!(ends, ids);
    let steps: Vec<&str> = r.steps.iter().map(|s| s.call_id.as_str()).collect();
    assert_eq!(steps, ids);
    // Each result answers exactly the call the history names.
    let last = llm.chat_requests().pop().unwrap();
    let results: Vec<&str> = last
        .messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .filter_map(|m| m.tool_call_id.as_deref())
        .collect();
    assert_eq!(results, ids);
}
