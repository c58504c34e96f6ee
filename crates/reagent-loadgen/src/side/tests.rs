use serde_json::{json, Value};

use super::*;

fn ev(id: u64, name: &str, data: Value) -> Ev {
    Ev {
        id: id.to_string(),
        name: name.into(),
        data,
    }
}

fn expect() -> Expect {
    Expect {
        interrupts: vec!["i1".into(), "i2".into()],
        next_run: vec!["i3".into()],
        ..Expect::default()
    }
}

/// No request is made when every accepted interrupt is drained or reported (the target is
/// unreachable).
#[tokio::test]
async fn interrupts_handed_to_a_next_run_are_counted_as_moved() {
    let http = reqwest::Client::new();
    let nowhere = Targets::new(vec!["http://127.0.0.1:9".into()]);
    let start = ev(1, "start", json!({"run_id": "r"}));
    let drained = ev(2, "step", json!({"type": "interrupt", "ids": ["i1"]}));
    let done = |data| ev(3, "done", data);
    let to_next = done(json!({"next_run_id": "r2",
        "unprocessed_interrupts": [{"id": "i2", "content": "x"}]}));
    let seen = [start.clone(), drained.clone(), to_next];
    let mut e = expect();
    assert_eq!(moved(&http, &nowhere, "c", &seen, &mut e).await, 2);
    // Without a next run (e.g. cancelled) nothing is moved: all must stay stored.
    let kept = done(json!({"unprocessed_interrupts": [{"id": "i2", "content": "x"}]}));
    let mut e = expect();
    assert_eq!(
        moved(&http, &nowhere, "c", &[start, drained, kept], &mut e).await,
        0
    );
}

/// An interrupt neither drained nor reported, and not found in the next run's query (here: the
/// conversation cannot be read), stays expected, so the verifier reports it.
#[tokio::test]
async fn an_interrupt_not_in_the_next_query_stays_expected() {
    let http = reqwest::Client::new();
    let mut nowhere = Targets::new(vec!["http://127.0.0.1:9".into()]);
    nowhere.retry_for = std::time::Duration::from_millis(300);
    let seen = [
        ev(1, "start", json!({"run_id": "r"})),
        ev(
            2,
            "done",
            json!({"next_run_id": "r2", "unprocessed_interrupts": []}),
        ),
    ];
    let mut e = expect();
    let m = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        moved(&http, &nowhere, "c", &seen, &mut e),
    )
    .await
    .unwrap();
    assert_eq!(m, 1, "only i3, accepted for the next run");
    assert_eq!(e.interrupts, ["i1", "i2"]);
}

#[test]
fn interrupt_texts_name_their_run() {
    assert!(content("r1").contains("r1"));
    assert_ne!(content("r1"), content("r2"));
}
