//! Engine safeguards with a scripted LLM (issue "ReAct engine", tests 9–15): tool selection,
//! self-reflection, cycle detection, the completion checklist, hooks as the LLM sees them, the
//! context guard and interrupts.

use std::sync::Arc;
use std::time::Duration;

use crate::support::engine::*;
use crate::support::tools::{registry, FakeTool};
use async_trait::async_trait;
use reagent::agent::events::{AgentEvent, StepEvent};
use reagent::agent::hooks::{
    Hook, HookContext, HookEntry, HookError, HookRunner, PostContext, PostVerdict, PreVerdict,
};
use reagent::agent::{AgentConfig, RunStatus};
use reagent::llm::{LlmError, Message, Role};
use reagent::testing::{ScriptedLlm, Turn};
use reagent::tools::Tool;
use serde_json::json;

fn many_tools(n: usize) -> Vec<Arc<dyn Tool>> {
    (0..n)
        .map(|i| FakeTool::new(&format!("tool{i}"), "r") as Arc<dyn Tool>)
        .collect()
}

fn selection_event(ev: &[AgentEvent]) -> Option<StepEvent> {
    ev.iter().find_map(|e| match e {
        AgentEvent::Step(s @ StepEvent::Selection { .. }) => Some(s.clone()),
        _ => None,
    })
}

#[tokio::test]
async fn no_selection_at_or_below_the_threshold() {
    let llm = Arc::new(ScriptedLlm::native());
    llm.text("ok");
    let (_, ev) = run_simple(llm.clone(), registry(many_tools(12)), "q").await;
    assert!(selection_event(&ev).is_none());
    assert_eq!(llm.chat_requests()[0].tools.len(), 12);
}

#[tokio::test]
async fn selection_filters_the_loop_tools_at_fifteen() {
    let llm = Arc::new(ScriptedLlm::native());
    let picked = r#"{"tools":["tool3","tool7","nonexistent","tool3","tool1","tool2","tool4","tool5","tool6"]}"#;
    llm.tool_calls(&[("s", "select_tools", picked)]).text("ok");
    let (_, ev) = run_simple(llm.clone(), registry(many_tools(15)), "q").await;
    let reqs = llm.chat_requests();
    // The selection request carries a compact catalog, not schemas.
    let catalog = &reqs[0].messages[1].content;
    assert!(catalog.contains("- tool14: A test tool"));
    assert!(!catalog.contains("properties"));
    let loop_tools: Vec<String> = reqs[1].tools.iter().map(|t| t.name.clone()).collect();
    assert_eq!(loop_tools.len(), 6);
    assert!(loop_tools.contains(&"tool3".to_string()) && loop_tools.contains(&"tool7".to_string()));
    assert!(!loop_tools.contains(&"nonexistent".to_string()));
    match selection_event(&ev) {
        Some(StepEvent::Selection {
            total_tools,
            selected,
            fallback,
            ..
        }) => {
            assert_eq!((total_tools, selected.len(), fallback), (15, 6, false));
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn garbage_selection_keeps_all_fifteen() {
    let llm = Arc::new(ScriptedLlm::native());
    // Level 1 garbage, level 2 garbage twice, level 3 garbage twice: 5 calls, then the loop.
    for _ in 0..5 {
        llm.text("I like turtles");
    }
    llm.text("ok");
    let (r, ev) = run_simple(llm.clone(), registry(many_tools(15)), "q").await;
    assert_eq!(r.outcome.status, RunStatus::Completed);
    assert_eq!(llm.chat_requests().last().unwrap().tools.len(), 15);
    assert!(matches!(
        selection_event(&ev),
        Some(StepEvent::Selection { fallback: true, .. })
    ));
    assert_eq!(
        r.outcome.usage.llm_calls, 7,
        "5 selection attempts + loop + synthesis"
    );
}

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
    let llm = Arc::new(ScriptedLlm::native());
    llm.tool_calls(&[("a", "lookup", r#"{"x":"1","y":2}"#)])
        .tool_calls(&[("b", "lookup", r#"{"y":2, "x":"1"}"#)])
        .tool_calls(&[("c", "lookup", r#"{"x":"1","y":2}"#)])
        .text("done")
        .text("done");
    let h = Harness::new(
        llm.clone(),
        registry(vec![FakeTool::new("lookup", "same")]),
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
    let llm = Arc::new(ScriptedLlm::native());
    for i in 0..3 {
        llm.tool_calls(&[(&format!("c{i}"), "lookup", &format!(r#"{{"x":"{i}"}}"#))]);
    }
    llm.text("done").text("done");
    let h = Harness::new(
        llm.clone(),
        registry(vec![FakeTool::new("lookup", "same")]),
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
    let n = std::sync::atomic::AtomicUsize::new(0);
    FakeTool::with("lookup", move |_| {
        n.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
            .to_string()
    })
    .describe("counts")
    .params(json!({"type":"object"}))
    .arc()
}

#[tokio::test]
async fn no_cycle_warning_when_results_differ() {
    let llm = Arc::new(ScriptedLlm::native());
    for i in 0..3 {
        llm.tool_calls(&[(&format!("c{i}"), "lookup", "{}")]);
    }
    llm.text("done").text("done");
    let h = Harness::new(
        llm.clone(),
        registry(vec![counter()]),
        Default::default(),
        AgentConfig::default(),
    );
    h.run("q").await;
    assert!(llm
        .chat_requests()
        .iter()
        .all(|r| count_containing(&r.messages, "identical arguments") == 0));
}

async fn run_with_tools(
    n_tools: usize,
    cfg: AgentConfig,
    after_check: &[&str],
) -> (Arc<ScriptedLlm>, reagent::agent::AgentResult) {
    let llm = Arc::new(ScriptedLlm::native());
    for i in 0..n_tools {
        llm.tool_calls(&[(&format!("c{i}"), "lookup", &format!(r#"{{"x":"{i}"}}"#))]);
    }
    llm.text("first final");
    for t in after_check {
        if *t == "TOOL" {
            llm.tool_calls(&[("again", "lookup", r#"{"x":"again"}"#)]);
        } else {
            llm.text(t);
        }
    }
    let h = Harness::new(
        llm.clone(),
        registry(vec![FakeTool::new("lookup", "v")]),
        Default::default(),
        cfg,
    );
    let (r, _) = h.run("q").await;
    (llm, r)
}

#[tokio::test]
async fn checklist_once_with_three_tools() {
    let (llm, r) = run_with_tools(3, AgentConfig::default(), &["confirmed final"]).await;
    assert_eq!(r.brief_answer, "confirmed final");
    let reqs = llm.chat_requests();
    assert_eq!(reqs.len(), 5);
    assert!(reqs[4]
        .messages
        .last()
        .unwrap()
        .content
        .contains("verify your answer"));
    assert_eq!(
        reqs[4].messages[reqs[4].messages.len() - 2].content,
        "first final"
    );
}

#[tokio::test]
async fn checklist_never_with_two_tools_or_when_disabled() {
    let (llm, r) = run_with_tools(2, AgentConfig::default(), &[]).await;
    assert_eq!(r.brief_answer, "first final");
    assert_eq!(llm.chat_requests().len(), 3);
    let cfg = AgentConfig {
        completion_check: false,
        ..AgentConfig::default()
    };
    let (llm, r) = run_with_tools(3, cfg, &[]).await;
    assert_eq!(r.brief_answer, "first final");
    assert_eq!(llm.chat_requests().len(), 4);
}

#[tokio::test]
async fn checklist_resumes_the_loop_when_the_llm_calls_a_tool() {
    let (llm, r) = run_with_tools(
        3,
        AgentConfig::default(),
        &["TOOL", "final after more work"],
    )
    .await;
    assert_eq!(r.brief_answer, "final after more work");
    assert_eq!(r.outcome.tool_calls, 4);
    assert_eq!(llm.chat_requests().len(), 6, "checklist only once");
    assert_eq!(llm.remaining(), 0);
}

struct Blocker;
#[async_trait]
impl Hook for Blocker {
    fn name(&self) -> &str {
        "blocker"
    }
    async fn pre_tool_use(&self, _: &HookContext) -> Result<PreVerdict, HookError> {
        Ok(PreVerdict::Block("organisation is read-only".into()))
    }
}

struct Rewriter;
#[async_trait]
impl Hook for Rewriter {
    fn name(&self) -> &str {
        "rewriter"
    }
    async fn pre_tool_use(&self, ctx: &HookContext) -> Result<PreVerdict, HookError> {
        let mut a = ctx.arguments.clone();
        a["x"] = json!("rewritten");
        Ok(PreVerdict::Rewrite(a))
    }
    async fn post_tool_use(&self, ctx: &PostContext) -> Result<PostVerdict, HookError> {
        Ok(PostVerdict::Rewrite(format!(
            "summary of {} chars",
            ctx.observation.len()
        )))
    }
}

#[tokio::test]
async fn hooks_block_and_rewrite_as_the_llm_and_tool_see_it() {
    let llm = Arc::new(ScriptedLlm::native());
    llm.tool_calls(&[("c", "lookup", r#"{"x":"orig"}"#)])
        .text("ok");
    let tool = FakeTool::new("lookup", "0123456789");
    let hooks = HookRunner::new(vec![HookEntry::new(Arc::new(Blocker))]);
    let h = Harness::new(
        llm.clone(),
        registry(vec![tool.clone()]),
        hooks,
        AgentConfig::default(),
    );
    let (_, ev) = h.run("q").await;
    assert_eq!(tool.call_count(), 0);
    let obs = llm.chat_requests()[1]
        .messages
        .last()
        .unwrap()
        .content
        .clone();
    assert!(obs.contains("organisation is read-only"), "{obs}");
    assert!(matches!(
        tool_ends(&ev)[0],
        StepEvent::ToolEnd { blocked: true, .. }
    ));

    let llm = Arc::new(ScriptedLlm::native());
    llm.tool_calls(&[("c", "lookup", r#"{"x":"orig"}"#)])
        .text("ok");
    let tool = FakeTool::new("lookup", "0123456789");
    let hooks = HookRunner::new(vec![HookEntry::new(Arc::new(Rewriter))]);
    let h = Harness::new(
        llm.clone(),
        registry(vec![tool.clone()]),
        hooks,
        AgentConfig::default(),
    );
    h.run("q").await;
    assert_eq!(tool.seen(), vec![json!({"x": "rewritten"})]);
    assert_eq!(
        llm.chat_requests()[1].messages.last().unwrap().content,
        "summary of 10 chars"
    );
}

#[tokio::test]
async fn context_guard_untouched_under_budget_and_compacts_over_it() {
    let llm = Arc::new(ScriptedLlm::native());
    llm.text("ok");
    let (_, ev) = run_simple(llm.clone(), registry(vec![]), "q").await;
    assert!(!ev.iter().any(|e| matches!(e, AgentEvent::Compact(_))));
    assert_eq!(llm.chat_requests().len(), 1);

    let llm = Arc::new(ScriptedLlm::native());
    for i in 0..6 {
        llm.tool_calls(&[(&format!("c{i}"), "big", &format!(r#"{{"x":"{i}"}}"#))]);
    }
    // Scripted replies are consumed in order; summary replies are plain text.
    let cfg = AgentConfig {
        context_budget_tokens: Some(3_000),
        completion_check: false,
        ..AgentConfig::default()
    };
    let tool = FakeTool::new("big", &"word ".repeat(800)); // ~1000 tokens per result
    let h = Harness::new(llm.clone(), registry(vec![tool]), Default::default(), cfg);
    h.queue.push("also check the weather").unwrap();
    for _ in 0..10 {
        llm.text("summary of earlier work");
    }
    let (r, ev) = h.run("the original question").await;
    let compacts: Vec<_> = ev
        .iter()
        .filter(|e| matches!(e, AgentEvent::Compact(_)))
        .collect();
    assert!(!compacts.is_empty(), "over budget → compact event");
    for req in llm.chat_requests() {
        // Pinned query and interrupt survive every compaction; no orphan tool message.
        if req.tools.is_empty() {
            continue; // the summary call itself
        }
        assert!(req
            .messages
            .iter()
            .any(|m| m.content == "the original question"));
        for (i, m) in req.messages.iter().enumerate() {
            if m.role == Role::Tool {
                let owner = req.messages[..i]
                    .iter()
                    .rev()
                    .find(|p| p.role != Role::Tool)
                    .unwrap();
                assert!(
                    owner
                        .tool_calls
                        .iter()
                        .any(|c| Some(&c.id) == m.tool_call_id.as_ref()),
                    "orphan tool message"
                );
            }
        }
    }
    assert!(r
        .messages
        .iter()
        .any(|m| m.content.contains("also check the weather") && m.pinned));
}

#[tokio::test]
async fn context_overflow_error_forces_one_compaction_and_retry() {
    let llm = Arc::new(ScriptedLlm::native());
    llm.push(Turn::Fail(LlmError::ContextLengthExceeded(
        "maximum context length".into(),
    )))
    .text("summary") // may be consumed by the forced compaction's summary call
    .text("answer after compaction");
    let (r, ev) = run_simple(llm.clone(), registry(vec![]), "q").await;
    assert_eq!(
        r.outcome.status,
        RunStatus::Completed,
        "{:?}",
        r.outcome.error
    );
    assert!(ev.iter().any(|e| matches!(e, AgentEvent::Compact(_))));

    let llm = Arc::new(ScriptedLlm::native());
    for _ in 0..3 {
        llm.push(Turn::Fail(LlmError::ContextLengthExceeded(
            "too long".into(),
        )));
    }
    let (r, _) = run_simple(llm.clone(), registry(vec![]), "q").await;
    assert_eq!(r.outcome.status, RunStatus::Failed, "only one forced retry");
}

#[tokio::test]
async fn pinned_content_over_the_budget_fails_the_run_instead_of_compacting_every_iteration() {
    let llm = Arc::new(ScriptedLlm::native());
    for i in 0..20 {
        llm.tool_calls(&[(&format!("c{i}"), "big", "{}")]);
        llm.text("summary");
    }
    let cfg = AgentConfig {
        context_budget_tokens: Some(500),
        completion_check: false,
        ..AgentConfig::default()
    };
    let tool = FakeTool::new("big", "small result");
    let mut h = Harness::new(llm.clone(), registry(vec![tool]), Default::default(), cfg);
    // ~2,500 tokens that compaction must keep: the system prompt is never summarised.
    let agent = Arc::try_unwrap(h.agent).unwrap_or_else(|_| unreachable!("not shared yet"));
    h.agent = Arc::new(agent.with_system_prompt(Some("You are a careful agent. ".repeat(400))));
    let (r, ev) = h.run("the question").await;
    assert_eq!(r.outcome.status, RunStatus::Failed);
    let error = r.outcome.error.clone().unwrap_or_default();
    assert!(error.contains("500-token budget"), "{error}");
    let compacts = ev
        .iter()
        .filter(|e| matches!(e, AgentEvent::Compact(_)))
        .count();
    assert_eq!(
        compacts, 1,
        "one compaction that made no progress, then stop"
    );
    assert!(
        r.outcome.answer.contains("context budget"),
        "{}",
        r.outcome.answer
    );
    assert!(
        llm.chat_requests().len() <= 2,
        "no loop call after the failed compaction"
    );
}

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
    llm.push(Turn::Reply(
        reagent::testing::scripted::response(&json_final("premature"), vec![]),
        Duration::from_millis(200),
    ))
    .text(&json_final("considered the follow-up"));
    let h = Harness::new(
        llm.clone(),
        registry(vec![]),
        Default::default(),
        AgentConfig::default(),
    );
    let q = h.queue.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        q.push("actually, in French").unwrap();
    });
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
    llm.push(Turn::Reply(
        reagent::testing::scripted::response("premature", vec![]),
        Duration::from_millis(200),
    ))
    .text("with follow-up");
    let h = Harness::new(
        llm.clone(),
        registry(vec![]),
        Default::default(),
        AgentConfig::default(),
    );
    let q = h.queue.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        q.push("one more thing").unwrap();
    });
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
