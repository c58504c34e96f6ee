use super::*;
use serde_json::{json, Value};

fn stream(items: &[(&str, Value)]) -> Vec<Ev> {
    items
        .iter()
        .enumerate()
        .map(|(i, (name, data))| Ev {
            id: (i + 1).to_string(),
            name: name.to_string(),
            data: data.clone(),
        })
        .collect()
}

fn good() -> Vec<Ev> {
    stream(&[
        ("start", json!({"run_id": "r"})),
        ("step", json!({"type": "tool_start", "call_id": "c1"})),
        ("step", json!({"type": "tool_end", "call_id": "c1"})),
        ("step", json!({"type": "interrupt", "ids": ["i1"]})),
        ("answer", json!({"status": "start"})),
        ("answer", json!({"status": "delta", "content": "wrong"})),
        ("answer", json!({"status": "reset"})),
        ("answer", json!({"status": "delta", "content": "he"})),
        ("answer", json!({"status": "delta", "content": "llo"})),
        (
            "answer",
            json!({"status": "done", "content": "hello", "fallback": true}),
        ),
        (
            "done",
            json!({"status": "completed", "answer": "hello",
            "unprocessed_interrupts": [{"id": "i2", "content": "x"}]}),
        ),
    ])
}

fn expect() -> Expect {
    Expect {
        statuses: vec!["completed"],
        interrupts: vec!["i1".into(), "i2".into()],
        ..Expect::default()
    }
}

#[test]
fn a_sound_stream_passes() {
    assert_eq!(verify(&good(), &expect()), Vec::<String>::new());
}

#[test]
fn each_violation_is_reported() {
    let mut gap = good();
    gap[3].id = "5".into();
    assert!(verify(&gap, &expect())[0].contains("expected 4"));

    let mut no_done = good();
    no_done.pop();
    let errs = verify(&no_done, &expect());
    assert!(errs.iter().any(|e| e.contains("not done")), "{errs:?}");

    let mut swapped = good();
    swapped.swap(1, 2);
    for (i, e) in swapped.iter_mut().enumerate() {
        e.id = (i + 1).to_string();
    }
    let errs = verify(&swapped, &expect());
    assert!(
        errs.iter().any(|e| e.contains("without a tool_start")),
        "{errs:?}"
    );

    let mut bad_text = good();
    bad_text[8].data = json!({"status": "delta", "content": "LO"});
    let errs = verify(&bad_text, &expect());
    assert!(
        errs.iter().any(|e| e.contains("concatenated deltas")),
        "{errs:?}"
    );

    let mut bad_answer = good();
    bad_answer[10].data["answer"] = json!("other");
    let errs = verify(&bad_answer, &expect());
    assert!(errs.iter().any(|e| e.contains("done.answer")), "{errs:?}");

    let wrong_status = Expect {
        statuses: vec!["cancelled"],
        ..expect()
    };
    assert!(verify(&good(), &wrong_status)[0].contains("status"));

    let lost = Expect {
        interrupts: vec!["i3".into()],
        ..expect()
    };
    assert!(verify(&good(), &lost)[0].contains("i3"));

    let mut late_step = good();
    late_step.insert(5, late_step[1].clone());
    for (i, e) in late_step.iter_mut().enumerate() {
        e.id = (i + 1).to_string();
    }
    let errs = verify(&late_step, &expect());
    assert!(
        errs.iter().any(|e| e.contains("after answer start")),
        "{errs:?}"
    );

    assert_eq!(verify(&[], &expect()), ["empty stream"]);
}

#[test]
fn steps_may_follow_an_answer_taken_back() {
    let events = stream(&[
        ("start", json!({"run_id": "r"})),
        ("answer", json!({"status": "start", "source": "reply"})),
        (
            "answer",
            json!({"status": "delta", "content": "Let me check."}),
        ),
        ("answer", json!({"status": "reset"})),
        ("step", json!({"type": "tool_start", "call_id": "c1"})),
        ("step", json!({"type": "tool_end", "call_id": "c1"})),
        ("answer", json!({"status": "start", "source": "reply"})),
        ("answer", json!({"status": "delta", "content": "hello"})),
        (
            "answer",
            json!({"status": "done", "content": "hello", "fallback": false}),
        ),
        (
            "done",
            json!({"status": "completed", "answer": "hello", "unprocessed_interrupts": []}),
        ),
    ]);
    let expect = Expect {
        statuses: vec!["completed"],
        ..Expect::default()
    };
    assert_eq!(verify(&events, &expect), Vec::<String>::new());
    let mut open = events.clone();
    open.remove(3);
    for (i, e) in open.iter_mut().enumerate() {
        e.id = (i + 1).to_string();
    }
    let errs = verify(&open, &expect);
    assert!(
        errs.iter().any(|e| e.contains("after answer start")),
        "{errs:?}"
    );
    assert!(
        errs.iter().any(|e| e.contains("second answer start")),
        "{errs:?}"
    );
}
