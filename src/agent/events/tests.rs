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
        error: None,
        unprocessed_interrupts: vec![],
        next_run_id: None,
    });
    let v: Value = serde_json::from_str(&e.data_json()).unwrap();
    assert_eq!(v["status"], "max_iterations");
    assert_eq!(v["mode"], "json");
    assert!(v.get("error").is_none());
    assert_eq!(AgentEvent::from_parts(e.name(), &e.data_json()).unwrap(), e);
}
