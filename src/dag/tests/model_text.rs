//! Model-supplied text in prompts and logs (issue 37, item 9): a long step id or task is quoted
//! clipped, never whole, and a plan of 100,000 steps is refused as too long without reading it.
//! (A reply over 1 MiB is not read at all: `llm::structured::MAX_STRUCTURED_REPLY_BYTES`.)

use std::sync::atomic::{AtomicU32, Ordering};

use super::*;

fn plan_prompts(h: &Harness) -> Vec<String> {
    h.calls
        .all()
        .iter()
        .filter(|c| kind(&c.request) == Kind::Plan)
        .map(|c| user_text(&c.request))
        .collect()
}

#[tokio::test]
async fn a_400_kb_step_id_is_not_quoted_whole_in_the_replan_prompt() {
    let huge = "i".repeat(400 << 10);
    let bad = plan_json(&[(&huge, "x", &[], None), (&huge, "y", &[], None)]);
    let h = Harness::new(Arc::new(move |req: &ChatRequest| match kind(req) {
        Kind::Plan => ok_json(bad.clone()),
        Kind::Analyse => ok_json(verdict(true, 1.0)),
        Kind::Step(_) => ok("did it"),
        other => panic!("unexpected {other:?}"),
    }));
    let (_, events) = h.run("the query").await;
    let plans = plan_prompts(&h);
    assert_eq!(plans.len(), 2, "one re-plan");
    assert!(plans[1].contains("Your previous plan was invalid: step id 'iii"));
    assert!(
        plans[1].len() < 10_000,
        "re-plan prompt of {} bytes",
        plans[1].len()
    );
    // The plan that ran is the one-step fallback, and no event carries the id.
    let ids: Vec<String> = statuses(&events).into_iter().map(|s| s.1).collect();
    assert!(!ids.is_empty() && ids.iter().all(|id| id == "1"), "{ids:?}");
}

#[test]
fn plan_errors_quote_ids_clipped() {
    let huge = "d".repeat(4 << 20);
    let errors = [
        PlanError::Duplicate(huge.clone()),
        PlanError::LongId(huge.clone()),
        PlanError::UnknownDependency(huge.clone(), huge.clone()),
        PlanError::Cycle(vec![huge.clone(), huge.clone(), huge]),
    ];
    for e in errors {
        let text = e.to_string();
        assert!(text.len() < 500, "{} bytes", text.len());
        assert!(text.contains("ddd…"), "{text}");
    }
}

#[tokio::test]
async fn a_long_task_is_clipped_in_the_next_rounds_prompt() {
    let task = "t".repeat(800 << 10);
    let round = Arc::new(AtomicU32::new(0));
    let h = Harness::new(Arc::new(move |req: &ChatRequest| match kind(req) {
        Kind::Plan if round.fetch_add(1, Ordering::SeqCst) == 0 => {
            ok_json(plan_json(&[("A", &task, &[], None)]))
        }
        Kind::Plan => ok_json(plan_json(&[("B", "short", &[], None)])),
        Kind::Analyse => ok_json(verdict(false, 0.1)),
        Kind::Step(_) => ok("did it"),
        other => panic!("unexpected {other:?}"),
    }));
    h.run("q").await;
    let plans = plan_prompts(&h);
    assert!(plans.len() >= 2);
    assert!(plans[1].contains("Previous rounds"));
    assert!(
        plans[1].len() < 20_000,
        "re-plan prompt of {} bytes",
        plans[1].len()
    );
}

#[test]
fn a_plan_of_100000_steps_is_read_only_up_to_the_limit_and_refused() {
    let steps: Vec<Value> = (0..100_000)
        .map(|i| json!({"id": i.to_string(), "task": "t"}))
        .collect();
    let raw = json!({ "steps": steps });
    let plan = crate::dag::plan::parse_at_most(&raw, 11).unwrap();
    assert_eq!(plan.steps.len(), 11);
    assert_eq!(validate(&plan, 10), Err(PlanError::TooMany(11, 10)));
    assert_eq!(
        PlanError::TooMany(11, 10).to_string(),
        "the plan has more than the 10 steps allowed"
    );
}
