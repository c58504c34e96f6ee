//! Tool selection: none at or below the threshold, the loop's tools filtered at fifteen, a
//! garbage selection keeps all of them.

use super::*;

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
