use super::*;
use serde_json::json;

#[test]
fn data_json_is_exact_size_and_matches_serde() {
    let big = "é\"x\n".repeat(30_000);
    for e in [
        AgentEvent::Answer(AnswerEvent::Delta {
            content: "tok ".into(),
        }),
        AgentEvent::Answer(AnswerEvent::Delta { content: big }),
        AgentEvent::Answer(AnswerEvent::Delta {
            content: "after a big one".into(),
        }),
    ] {
        let data = e.data_json();
        assert_eq!(data, serde_json::to_string(&e).unwrap());
        assert_eq!(data.capacity(), data.len());
    }
}

#[test]
fn step_and_answer_serialise_to_spec_shapes() {
    let e = AgentEvent::Step(StepEvent::Thinking {
        iteration: 1,
        reasoning: "r".into(),
        dag_step: None,
    });
    assert_eq!(e.name(), "step");
    let v: Value = serde_json::from_str(&e.data_json()).unwrap();
    assert_eq!(v, json!({"type":"thinking","iteration":1,"reasoning":"r"}));

    let a = AgentEvent::Answer(AnswerEvent::Done {
        content: "x".into(),
        fallback: false,
    });
    let v: Value = serde_json::from_str(&a.data_json()).unwrap();
    assert_eq!(v, json!({"status":"done","content":"x","fallback":false}));
    let d = AgentEvent::Answer(AnswerEvent::Delta {
        content: "x".into(),
    });
    assert_eq!(d.data_json(), r#"{"status":"delta","content":"x"}"#);
}

#[test]
fn events_round_trip_through_name_and_data() {
    let e = AgentEvent::Done(RunOutcome {
        status: RunStatus::MaxIterations,
        iterations: 3,
        tool_calls: 2,
        usage: Usage::call(1, 2),
        elapsed_ms: 5,
        mode: Mode::Json,
        answer: "a".into(),
        synthesis: true,
        error: None,
        unprocessed_interrupts: vec![],
        next_run_id: None,
        dag: None,
        required_action: None,
        trace_id: None,
        trace_url: None,
    });
    let v: Value = serde_json::from_str(&e.data_json()).unwrap();
    assert_eq!(v["status"], "max_iterations");
    assert_eq!(v["mode"], "json");
    assert!(v.get("error").is_none());
    assert_eq!(AgentEvent::from_parts(e.name(), &e.data_json()).unwrap(), e);
}

#[test]
fn dag_events_have_the_spec_shapes_and_round_trip() {
    use super::{DagStatus, DagSummary, PlanStepView};
    let plan = AgentEvent::Step(StepEvent::Plan {
        round: 1,
        steps: vec![PlanStepView {
            id: "A".into(),
            task: "t".into(),
            dependencies: vec![],
            tool_hint: None,
            model_hint: Some("fast".into()),
            model: "quick".into(),
        }],
    });
    let v: Value = serde_json::from_str(&plan.data_json()).unwrap();
    assert_eq!(v["type"], "plan");
    assert_eq!(v["steps"][0]["tool_hint"], Value::Null);
    let step = AgentEvent::Step(StepEvent::DagStep {
        round: 2,
        step_id: "A".into(),
        status: DagStatus::Failed,
        model: "quick".into(),
        result: None,
        error: Some("dependency B failed".into()),
        duration_ms: None,
    });
    let v: Value = serde_json::from_str(&step.data_json()).unwrap();
    assert_eq!(
        v,
        json!({"type": "dag_step", "round": 2, "step_id": "A", "status": "failed",
               "model": "quick", "error": "dependency B failed"})
    );
    let tagged = AgentEvent::Step(StepEvent::Thinking {
        iteration: 1,
        reasoning: String::new(),
        dag_step: Some("A".into()),
    });
    let mut done = RunOutcome::failed(Mode::Native, "a", "e");
    done.dag = Some(DagSummary {
        engine: crate::domain::Engine::Dag,
        rounds: 2,
        achieved: false,
        confidence: 0.4,
    });
    let done = AgentEvent::Done(done);
    let v: Value = serde_json::from_str(&done.data_json()).unwrap();
    assert_eq!(
        (v["engine"].clone(), v["rounds"].clone()),
        (json!("dag"), json!(2))
    );
    for e in [plan, step, tagged, done] {
        assert_eq!(AgentEvent::from_parts(e.name(), &e.data_json()).unwrap(), e);
    }
}
