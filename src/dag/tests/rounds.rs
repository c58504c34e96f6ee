//! Planning and rounds: re-plans, the budget, interrupts, the rounds cap, fallbacks, routing.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use super::*;
use crate::dag::route::route;
use crate::domain::Engine;

#[tokio::test]
async fn an_invalid_plan_gets_one_replan_with_its_error_then_the_one_step_fallback() {
    let bad_plans = [
        (
            plan_json(&[("a", "x", &[], None), ("a", "y", &[], None)]),
            "used by more than one step",
        ),
        (
            plan_json(&[("a", "x", &["b"], None), ("b", "y", &["a"], None)]),
            "form a cycle",
        ),
    ];
    for (bad, message) in bad_plans {
        let h = Harness::new(Arc::new(move |req: &ChatRequest| match kind(req) {
            Kind::Plan => ok_json(bad.clone()),
            Kind::Analyse => ok_json(verdict(true, 1.0)),
            Kind::Step(_) => ok("did it"),
            other => panic!("unexpected {other:?}"),
        }));
        let (_, events) = h.run("the whole query").await;
        let plans: Vec<String> = h
            .calls
            .all()
            .iter()
            .filter(|c| kind(&c.request) == Kind::Plan)
            .map(|c| user_text(&c.request))
            .collect();
        assert_eq!(plans.len(), 2, "one re-plan");
        assert!(!plans[0].contains("invalid"));
        assert!(plans[1].contains(message), "{}", plans[1]);
        if message.contains("more than one") {
            assert!(!plans[1].contains("cycle"), "a duplicate is not a cycle");
        }
        let steps = events
            .iter()
            .find_map(|e| match e {
                AgentEvent::Step(StepEvent::Plan { steps, .. }) => Some(steps.clone()),
                _ => None,
            })
            .expect("plan event");
        assert_eq!(steps.len(), 1);
        assert_eq!(steps[0].task, "the whole query");
        assert_eq!(h.step_calls("the whole query").len(), 1);
        assert_eq!(done(&events).status, crate::agent::RunStatus::Completed);
    }
}

/// Plans one step per round (`step <round>`), and answers analyses with `judge`.
fn rounds_script(judge: Value, on_step: impl Fn() + Send + Sync + 'static) -> ChatFn {
    let round = Arc::new(AtomicU32::new(0));
    Arc::new(move |req: &ChatRequest| match kind(req) {
        Kind::Plan => {
            let n = round.fetch_add(1, Ordering::SeqCst) + 1;
            let task = format!("step {n}");
            ok_json(plan_json(&[("s", &task, &[], None)]))
        }
        Kind::Analyse => ok_json(judge.clone()),
        Kind::Step(_) => {
            on_step();
            ok("partial")
        }
        other => panic!("unexpected {other:?}"),
    })
}

#[tokio::test]
async fn the_analyser_gets_exactly_max_replans_replans() {
    let mut h = Harness::new(rounds_script(verdict(false, 0.2), || {}));
    h.dag.max_replans = 2;
    let (_, events) = h.run("q").await;
    assert_eq!(count(&events, |s| matches!(s, StepEvent::Replan { .. })), 2);
    assert_eq!(count(&events, |s| matches!(s, StepEvent::Plan { .. })), 3);
    assert_eq!(
        count(&events, |s| matches!(s, StepEvent::Analysis { .. })),
        3
    );
    let dag = done(&events).dag.expect("summary");
    assert_eq!((dag.rounds, dag.achieved), (3, false));
    // The second plan saw the first round's results and analysis.
    let second = h
        .calls
        .all()
        .into_iter()
        .filter(|c| kind(&c.request) == Kind::Plan)
        .nth(1)
        .map(|c| user_text(&c.request))
        .unwrap_or_default();
    assert!(second.contains("Previous rounds") && second.contains("partial"));
}

#[tokio::test]
async fn a_confident_verdict_stops_replanning() {
    let h = Harness::new(rounds_script(verdict(false, 0.85), || {}));
    let (_, events) = h.run("q").await;
    assert_eq!(count(&events, |s| matches!(s, StepEvent::Replan { .. })), 0);
}

#[tokio::test]
async fn an_interrupt_skips_waiting_steps_lets_running_ones_finish_and_replans_for_free() {
    let queue = Arc::new(InterruptQueue::new());
    let q = queue.clone();
    let round = Arc::new(AtomicU32::new(0));
    let chat: ChatFn = Arc::new(move |req: &ChatRequest| match kind(req) {
        Kind::Plan if round.fetch_add(1, Ordering::SeqCst) == 0 => ok_json(plan_json(&[
            ("A", "task A", &[], None),
            ("B", "task B", &["A"], None),
        ])),
        Kind::Plan => ok_json(plan_json(&[("N", "task N", &[], None)])),
        Kind::Analyse => ok_json(verdict(true, 0.9)),
        Kind::Step(task) => {
            if task == "task A" {
                // The user writes while A runs.
                q.push("also check Paris").expect("open queue");
            }
            ok(&format!("{task} done"))
        }
        other => panic!("unexpected {other:?}"),
    });
    let mut h = Harness::new(chat);
    h.queue = queue;
    h.dag.max_replans = 0;
    let (result, events) = h.run("q").await;
    assert_eq!(final_status(&events, 1, "A"), Some(DagStatus::Completed));
    assert_eq!(final_status(&events, 1, "B"), Some(DagStatus::Skipped));
    assert!(h.step_calls("task B").is_empty());
    assert_eq!(final_status(&events, 2, "N"), Some(DagStatus::Completed));
    assert_eq!(
        count(&events, |s| matches!(s, StepEvent::Interrupt { .. })),
        1
    );
    assert_eq!(count(&events, |s| matches!(s, StepEvent::Replan { .. })), 1);
    let n = h.step_calls("task N");
    assert!(user_text(&n[0].request).contains("[User follow-up]: also check Paris"));
    assert_eq!(result.result.processed_interrupts.len(), 1);
    assert!(done(&events).unprocessed_interrupts.is_empty());
}

#[tokio::test]
async fn the_rounds_cap_holds_against_a_stream_of_interrupts() {
    let queue = Arc::new(InterruptQueue::new());
    let q = queue.clone();
    let mut h = Harness::new(rounds_script(verdict(false, 0.1), move || {
        let _ = q.push("one more thing");
    }));
    h.queue = queue;
    h.dag.max_rounds = 3;
    let (_, events) = h.run("q").await;
    assert_eq!(count(&events, |s| matches!(s, StepEvent::Plan { .. })), 3);
    let out = done(&events);
    assert_eq!(out.dag.expect("summary").rounds, 3);
    // The last round's message waits for the next run.
    assert_eq!(out.unprocessed_interrupts.len(), 1);
}

#[tokio::test]
async fn a_failed_analysis_and_a_failed_synthesis_still_end_with_an_answer() {
    let calls = Calls::default();
    let chat: ChatFn = Arc::new(|req: &ChatRequest| match kind(req) {
        Kind::Plan => ok_json(plan_json(&[("A", "task A", &[], None)])),
        Kind::Analyse => ok("I refuse to produce JSON"),
        Kind::Step(_) => ok("the step's finding"),
        other => panic!("unexpected {other:?}"),
    });
    let main = RoutedLlm::new("main", &calls, chat)
        .with_stream(Arc::new(|_| Err(LlmError::Connect("down".into()))));
    let mut h = Harness::with_models(
        calls,
        vec![(Harness::info("main", &[]), Arc::new(main) as Arc<dyn Llm>)],
    );
    h.dag.max_replans = 0;
    let (_, events) = h.run("q").await;
    assert!(events.iter().any(|e| matches!(e,
        AgentEvent::Step(StepEvent::Analysis { achieved: false, confidence, .. }) if *confidence == 0.0)));
    let out = done(&events);
    assert_eq!(out.status, crate::agent::RunStatus::Completed);
    assert!(out.answer.contains("the step's finding"), "{}", out.answer);
    assert!(events.iter().any(|e| matches!(
        e,
        AgentEvent::Answer(crate::agent::events::AnswerEvent::Done { fallback: true, .. })
    )));
}

#[tokio::test]
async fn auto_routes_both_ways_and_falls_back_on_garbage() {
    for (reply, want) in [
        (
            json!({"engine": "dag", "reasoning": "many parts"}).to_string(),
            Engine::Dag,
        ),
        (
            json!({"engine": "react", "reasoning": "simple"}).to_string(),
            Engine::React,
        ),
        ("no idea".to_string(), Engine::React),
        (json!({"engine": "turbo"}).to_string(), Engine::React),
    ] {
        let calls = Calls::default();
        let chat: ChatFn = Arc::new(move |req: &ChatRequest| {
            assert_eq!(kind(req), Kind::Route);
            ok(&reply)
        });
        let llm = RoutedLlm::new("main", &calls, chat);
        let (engine, usage) = route(&llm, "compare three cities").await;
        assert_eq!(engine, want);
        assert_eq!(usage.llm_calls as usize, calls.all().len());
    }
    let calls = Calls::default();
    let failing: ChatFn = Arc::new(|_: &ChatRequest| {
        futures::future::ready(Err(LlmError::Connect("down".into()))).boxed()
    });
    let llm = RoutedLlm::new("main", &calls, failing);
    assert_eq!(route(&llm, "q").await.0, Engine::React);
}

#[tokio::test]
async fn an_unusable_model_is_not_replanned_forever() {
    let h = Harness::new(Arc::new(|_: &ChatRequest| {
        futures::future::ready(Err(LlmError::Connect("down".into()))).boxed()
    }));
    let (_, events) = h.run("q").await;
    let out = done(&events);
    assert_eq!(out.status, crate::agent::RunStatus::Failed);
    assert_eq!(out.dag.expect("summary").rounds, 1);
    assert_eq!(count(&events, |s| matches!(s, StepEvent::Replan { .. })), 0);
    assert!(!out.answer.is_empty());
    assert_eq!(out.usage.llm_calls as usize, h.calls.all().len());
}

#[tokio::test]
async fn a_dag_answer_is_synthesised_under_auto_and_the_results_under_never() {
    use crate::domain::SynthesisPolicy;
    use crate::llm::sampling::Sampled;
    use crate::testing::scripted::CallKind;
    for policy in [SynthesisPolicy::Auto, SynthesisPolicy::Never] {
        let calls = Calls::default();
        let chat: ChatFn = Arc::new(|req: &ChatRequest| match kind(req) {
            Kind::Plan => ok_json(plan_json(&[("A", "task A", &[], None)])),
            Kind::Analyse => ok_json(verdict(true, 0.9)),
            Kind::Step(_) => ok("the step's finding"),
            other => panic!("unexpected {other:?}"),
        });
        let main = Arc::new(RoutedLlm::new("main", &calls, chat)) as Arc<dyn Llm>;
        let main = Sampled::agent(main, crate::llm::Sampling::default(), Some(policy));
        let h = Harness::with_models(calls, vec![(Harness::info("main", &[]), main)]);
        let (_, events) = h.run("q").await;
        let out = done(&events);
        let streamed = h
            .calls
            .all()
            .iter()
            .filter(|c| c.kind == CallKind::Stream)
            .count();
        assert_eq!(out.status, crate::agent::RunStatus::Completed, "{policy}");
        if policy == SynthesisPolicy::Never {
            assert_eq!(streamed, 0, "no synthesis call");
            assert!(!out.synthesis);
            assert!(out.answer.contains("the step's finding"), "{}", out.answer);
        } else {
            assert_eq!(streamed, 1, "auto synthesises a DAG run's answer");
            assert!(out.synthesis);
            assert_eq!(out.answer, "Final answer.");
        }
    }
}
