//! `step {type: "safeguard"}`: one event each time a safeguard acts, none in a plain run.

use super::*;
use reagent::agent::events::{AnswerEvent, SafeguardKind};

/// `(iteration, kind, tool)` of every safeguard event, in order.
fn safeguards(events: &[AgentEvent]) -> Vec<(u32, SafeguardKind, Option<String>)> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Step(StepEvent::Safeguard {
                iteration,
                kind,
                tool,
                ..
            }) => Some((*iteration, *kind, tool.clone())),
            _ => None,
        })
        .collect()
}

/// A native-mode run of `lookup` calls (the `i`-th with arguments `args(i)`), then `answers`.
async fn run(
    calls: usize,
    args: impl Fn(usize) -> String,
    answers: &[&str],
    cfg: AgentConfig,
) -> Vec<AgentEvent> {
    let llm = Arc::new(ScriptedLlm::native());
    for i in 0..calls {
        llm.tool_calls(&[(&format!("c{i}"), "lookup", &args(i))]);
    }
    for a in answers {
        llm.text(a);
    }
    let h = Harness::new(
        llm,
        registry(vec![FakeTool::new("lookup", "same")]),
        Default::default(),
        cfg,
    );
    h.run("find the thing").await.1
}

fn distinct(i: usize) -> String {
    format!(r#"{{"x":"{i}"}}"#)
}

fn no_checklist() -> AgentConfig {
    AgentConfig {
        completion_check: false,
        ..AgentConfig::default()
    }
}

#[tokio::test]
async fn a_plain_run_has_no_safeguard_event() {
    let ev = run(2, distinct, &["done"], AgentConfig::default()).await;
    assert!(matches!(ev.last(), Some(AgentEvent::Done(_))));
    assert_eq!(safeguards(&ev), vec![]);
}

#[tokio::test]
async fn reflection_is_announced_each_time_it_is_appended() {
    let ev = run(12, distinct, &["done"], no_checklist()).await;
    assert_eq!(
        safeguards(&ev),
        vec![
            (6, SafeguardKind::Reflection, None),
            (12, SafeguardKind::Reflection, None)
        ]
    );
    let data = ev
        .iter()
        .find(|e| matches!(e, AgentEvent::Step(StepEvent::Safeguard { .. })))
        .map(AgentEvent::data_json)
        .unwrap();
    assert!(
        !data.contains("find the thing") && !data.contains("Pause"),
        "the injected text stays internal: {data}"
    );
}

#[tokio::test]
async fn a_cycle_warning_names_the_tool_after_its_results() {
    // The same call in each reply, after another one (so that no reply begins with the call
    // just made), then alone.
    let llm = Arc::new(ScriptedLlm::native());
    for i in 0..3 {
        let other = distinct(i);
        llm.tool_calls(&[
            (&format!("c{i}"), "lookup", r#"{"x":"1"}"#),
            (&format!("n{i}"), "note", &other),
        ]);
    }
    llm.tool_calls(&[("c3", "lookup", r#"{"x":"1"}"#)])
        .text("done");
    let tools = registry(vec![
        FakeTool::new("lookup", "same"),
        FakeTool::new("note", "ok"),
    ]);
    let h = Harness::new(llm, tools, Default::default(), no_checklist());
    let ev = h.run("find the thing").await.1;
    let expected = |n| (n, SafeguardKind::CycleWarning, Some("lookup".to_string()));
    // The fourth identical result is past the warning: the loop stops there (`cycle_stop`).
    assert_eq!(
        safeguards(&ev),
        vec![
            expected(3),
            expected(4),
            (4, SafeguardKind::CycleStop, None)
        ]
    );
    // It follows the tool_end of the call that completed the cycle.
    let at = |pred: &dyn Fn(&AgentEvent) -> bool| ev.iter().position(pred).unwrap();
    let end3 = at(&|e| matches!(e, AgentEvent::Step(StepEvent::ToolEnd { iteration: 3, .. })));
    let warn = at(&|e| matches!(e, AgentEvent::Step(StepEvent::Safeguard { .. })));
    assert!(end3 < warn);
}

#[tokio::test]
async fn a_reply_repeating_the_last_call_is_announced_as_a_cycle_stop() {
    let same = |_| r#"{"x":"1"}"#.to_string();
    let ev = run(2, same, &["not reached"], no_checklist()).await;
    assert_eq!(
        safeguards(&ev),
        vec![(2, SafeguardKind::CycleStop, Some("lookup".to_string()))]
    );
}

#[tokio::test]
async fn the_completion_check_is_announced_once_in_both_modes() {
    let ev = run(3, distinct, &["first", "checked"], AgentConfig::default()).await;
    assert_eq!(
        safeguards(&ev),
        vec![(4, SafeguardKind::CompletionCheck, None)]
    );

    let llm = Arc::new(ScriptedLlm::json());
    for i in 0..3 {
        llm.text(&json_tool("lookup", json!({ "x": i })));
    }
    llm.text(&json_final("first")).text(&json_final("checked"));
    let h = Harness::new(
        llm,
        registry(vec![FakeTool::new("lookup", "v")]),
        Default::default(),
        AgentConfig::default(),
    );
    let (r, ev) = h.run("q").await;
    assert_eq!(r.brief_answer, "checked");
    assert_eq!(
        safeguards(&ev),
        vec![(4, SafeguardKind::CompletionCheck, None)]
    );
}

#[tokio::test]
async fn the_iteration_cap_is_announced_before_the_answer() {
    let cfg = AgentConfig {
        max_iterations: 3,
        ..AgentConfig::default()
    };
    let ev = run(3, distinct, &[], cfg).await;
    assert_eq!(
        safeguards(&ev),
        vec![(3, SafeguardKind::MaxIterations, None)]
    );
    let cap = ev
        .iter()
        .position(|e| matches!(e, AgentEvent::Step(StepEvent::Safeguard { .. })))
        .unwrap();
    let answer = ev
        .iter()
        .position(|e| matches!(e, AgentEvent::Answer(AnswerEvent::Start { .. })))
        .unwrap();
    assert!(cap < answer);
    assert!(matches!(ev.last(), Some(AgentEvent::Done(d)) if d.status == RunStatus::MaxIterations));
}
