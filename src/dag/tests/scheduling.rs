//! The executor: concurrency, cascade, model by role, step timeout, cancel.

use std::sync::Arc;

use futures::future::FutureExt;
use serde_json::json;
use tokio::sync::Barrier;

use super::*;
use crate::llm::ToolCall;

/// Plans `plan` once, judges every round achieved.
fn planner_then(
    plan: Value,
    step: impl Fn(&str, &ChatRequest) -> BoxFuture<'static, Result<ChatResponse, LlmError>>
        + Send
        + Sync
        + 'static,
) -> ChatFn {
    Arc::new(move |req: &ChatRequest| match kind(req) {
        Kind::Plan => ok_json(plan.clone()),
        Kind::Analyse => ok_json(verdict(true, 0.9)),
        Kind::Step(task) => step(&task, req),
        other => panic!("unexpected request {other:?}"),
    })
}

#[tokio::test]
async fn a_diamond_runs_its_middle_concurrently_and_its_sink_after_both() {
    let plan = plan_json(&[
        ("A", "task A", &[], None),
        ("B", "task B", &["A"], None),
        ("C", "task C", &["A"], None),
        ("D", "task D", &["B", "C"], None),
    ]);
    // B and C each wait for the other inside their model call: the run only finishes if they
    // are in flight at the same time.
    let barrier = Arc::new(Barrier::new(2));
    let h = Harness::new(planner_then(plan, move |task, _| {
        let b = barrier.clone();
        let text = format!("result of {task}");
        async move {
            if text.ends_with('B') || text.ends_with('C') {
                b.wait().await;
            }
            Ok(response(&text, vec![]))
        }
        .boxed()
    }));
    let (result, events) = h.run("the diamond").await;
    let (a, b, c, d) = (
        h.step_calls("task A"),
        h.step_calls("task B"),
        h.step_calls("task C"),
        h.step_calls("task D"),
    );
    assert!(b[0].start > a[0].end && c[0].start > a[0].end);
    assert!(
        b[0].start < c[0].end && c[0].start < b[0].end,
        "B and C overlap"
    );
    assert!(d[0].start > b[0].end && d[0].start > c[0].end);
    let d_query = user_text(&d[0].request);
    assert!(d_query.contains("result of task B") && d_query.contains("result of task C"));
    for id in ["A", "B", "C", "D"] {
        assert_eq!(final_status(&events, 1, id), Some(DagStatus::Completed));
    }
    // queued before running, running before completed, for every step.
    for id in ["A", "B", "C", "D"] {
        let mine: Vec<DagStatus> = statuses(&events)
            .into_iter()
            .filter(|(_, s, _)| s == id)
            .map(|(_, _, st)| st)
            .collect();
        assert_eq!(
            mine,
            [DagStatus::Queued, DagStatus::Running, DagStatus::Completed]
        );
    }
    let out = done(&events);
    assert_eq!(out.status, crate::agent::RunStatus::Completed);
    assert_eq!(out.usage.llm_calls as usize, h.calls.all().len());
    let dag = out.dag.expect("dag summary");
    assert_eq!((dag.rounds, dag.achieved), (1, true));
    assert_eq!(result.result.outcome.answer, "Final answer.");
}

#[tokio::test]
async fn a_step_whose_dependency_failed_fails_without_running() {
    let plan = plan_json(&[
        ("A", "task A", &[], None),
        ("B", "task B", &["A"], None),
        ("C", "task C", &[], None),
    ]);
    let h = Harness::new(planner_then(plan, |task, _| {
        if task == "task A" {
            futures::future::ready(Err(LlmError::InvalidResponse("broken".into()))).boxed()
        } else {
            ok("fine")
        }
    }));
    let (_, events) = h.run("q").await;
    assert_eq!(final_status(&events, 1, "A"), Some(DagStatus::Failed));
    assert_eq!(final_status(&events, 1, "C"), Some(DagStatus::Completed));
    assert!(h.step_calls("task B").is_empty(), "B never ran");
    let b_events: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Step(StepEvent::DagStep {
                step_id,
                status,
                error,
                ..
            }) if step_id == "B" => Some((*status, error.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        b_events,
        [(DagStatus::Failed, Some("dependency A failed".to_string()))]
    );
}

#[tokio::test]
async fn a_model_hint_routes_every_request_of_its_step_to_the_model_with_that_role() {
    let calls = Calls::default();
    let plan = plan_json(&[
        ("A", "task A", &[], Some("fast")),
        ("B", "task B", &[], None),
        ("C", "task C", &[], Some("no-such-role")),
    ]);
    let chat = planner_then(plan, |task, req| {
        // A: one tool call, then its answer: two requests of the same step.
        let has_result = req.messages.iter().any(|m| m.role == Role::Tool);
        if task == "task A" && !has_result {
            let call = ToolCall {
                id: "c1".into(),
                name: "calculator".into(),
                arguments: json!({"expression": "1+1"}).to_string(),
            };
            return futures::future::ready(Ok(response("", vec![call]))).boxed();
        }
        ok(&format!("done {task}"))
    });
    let main = Arc::new(RoutedLlm::new("main", &calls, chat.clone())) as Arc<dyn Llm>;
    let fast = Arc::new(RoutedLlm::new("quick", &calls, chat)) as Arc<dyn Llm>;
    let h = Harness::with_models(
        calls,
        vec![
            (Harness::info("main", &[]), main),
            (Harness::info("quick", &["fast"]), fast),
        ],
    );
    let (_, events) = h.run("q").await;
    let a = h.step_calls("task A");
    assert_eq!(a.len(), 2);
    assert!(a.iter().all(|c| c.model == "quick"), "{a:?}");
    assert!(h.step_calls("task B").iter().all(|c| c.model == "main"));
    assert!(h.step_calls("task C").iter().all(|c| c.model == "main"));
    // Planning, analysis and the answer stay on the run's model.
    assert!(h
        .calls
        .all()
        .iter()
        .filter(|c| !matches!(kind(&c.request), Kind::Step(_)))
        .all(|c| c.model == "main"));
    let models: Vec<(String, String)> = events
        .iter()
        .find_map(|e| match e {
            AgentEvent::Step(StepEvent::Plan { steps, .. }) => Some(
                steps
                    .iter()
                    .map(|s| (s.id.clone(), s.model.clone()))
                    .collect(),
            ),
            _ => None,
        })
        .expect("plan event");
    assert_eq!(models[0], ("A".to_string(), "quick".to_string()));
    assert_eq!(models[1].1, "main");
    // A's tool events carry its id.
    assert!(events.iter().any(|e| matches!(e,
        AgentEvent::Step(StepEvent::ToolEnd { dag_step: Some(s), .. }) if s == "A")));
}

#[tokio::test]
async fn a_step_timeout_fails_only_that_step() {
    let plan = plan_json(&[("A", "task A", &[], None), ("B", "task B", &[], None)]);
    let mut h = Harness::new(planner_then(plan, |task, _| {
        if task == "task A" {
            futures::future::pending().boxed()
        } else {
            ok("B done")
        }
    }));
    h.dag.step_timeout_s = 1;
    let (_, events) = h.run("q").await;
    assert_eq!(final_status(&events, 1, "A"), Some(DagStatus::Failed));
    assert_eq!(final_status(&events, 1, "B"), Some(DagStatus::Completed));
    assert!(events.iter().any(|e| matches!(e,
        AgentEvent::Step(StepEvent::DagStep { step_id, error: Some(err), .. })
            if step_id == "A" && err.contains("timed out"))));
    assert_eq!(done(&events).status, crate::agent::RunStatus::Completed);
}

#[tokio::test]
async fn cancel_stops_every_running_step_and_leaves_a_valid_history() {
    let plan = plan_json(&[
        ("A", "task A", &[], None),
        ("B", "task B", &[], None),
        ("C", "task C", &["A"], None),
    ]);
    let cancel = CancellationToken::new();
    let token = cancel.clone();
    let barrier = Arc::new(Barrier::new(2));
    let mut h = Harness::new(planner_then(plan, move |task, req| {
        let has_result = req.messages.iter().any(|m| m.role == Role::Tool);
        if has_result {
            return ok("late");
        }
        // Both steps ask for a tool; once both have asked, the user cancels.
        let (b, t) = (barrier.clone(), token.clone());
        let id = if task == "task A" { "ca" } else { "cb" };
        let call = ToolCall {
            id: id.into(),
            name: "calculator".into(),
            arguments: json!({"expression": "2*3"}).to_string(),
        };
        async move {
            if b.wait().await.is_leader() {
                t.cancel();
            }
            Ok(response("", vec![call]))
        }
        .boxed()
    }));
    h.cancel = cancel;
    let (result, events) = h.run("q").await;
    let out = done(&events);
    assert_eq!(out.status, crate::agent::RunStatus::Cancelled);
    let st = statuses(&events);
    for id in ["A", "B"] {
        let last = st
            .iter()
            .rev()
            .find(|(_, s, _)| s == id)
            .map(|(_, _, x)| *x);
        assert_eq!(last, Some(DagStatus::Failed), "{id} ended");
    }
    assert_eq!(final_status(&events, 1, "C"), Some(DagStatus::Skipped));
    for round in &result.rounds {
        for s in &round.steps {
            assert!(s.status.is_some_and(|x| x.is_final()), "{s:?}");
            if let Some(run) = &s.run {
                assert_valid_history(&run.messages);
            }
        }
    }
    assert!(matches!(
        events[events.len() - 2],
        AgentEvent::Answer(crate::agent::events::AnswerEvent::Done { .. })
    ));
}

/// Every assistant `tool_calls` message is followed by exactly one tool result per call.
fn assert_valid_history(messages: &[crate::llm::Message]) {
    for (i, m) in messages.iter().enumerate() {
        if m.tool_calls.is_empty() {
            continue;
        }
        let results: Vec<&str> = messages[i + 1..]
            .iter()
            .take_while(|r| r.role == Role::Tool)
            .filter_map(|r| r.tool_call_id.as_deref())
            .collect();
        let ids: Vec<&str> = m.tool_calls.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(results, ids, "tool results answer their calls");
    }
}
