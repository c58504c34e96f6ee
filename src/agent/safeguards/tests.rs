use super::*;
use serde_json::json;

#[test]
fn third_identical_call_warns_and_repeats() {
    let mut d = CycleDetector::new(3);
    let a = json!({"x": 1, "y": [1, 2]});
    assert_eq!(d.record("t", &a, "r"), None);
    assert_eq!(d.record("t", &a, "r"), None);
    assert_eq!(d.record("t", &a, "r"), Some(Cycle::SameResult(3)));
    assert_eq!(d.record("t", &a, "r"), Some(Cycle::SameResult(4)));
}

#[test]
fn key_order_does_not_matter_but_values_and_results_do() {
    let mut d = CycleDetector::new(3);
    let a: Value = serde_json::from_str(r#"{"a":1,"b":2}"#).unwrap();
    let b: Value = serde_json::from_str(r#"{ "b": 2, "a": 1 }"#).unwrap();
    d.record("t", &a, "r");
    d.record("t", &b, "r");
    assert_eq!(d.record("t", &a, "r"), Some(Cycle::SameResult(3)));

    let mut d = CycleDetector::new(3);
    d.record("t", &json!({"a": 1}), "r");
    d.record("t", &json!({"a": 2}), "r");
    assert_eq!(d.record("t", &json!({"a": 3}), "r"), None);

    let mut d = CycleDetector::new(3);
    d.record("t", &a, "r1");
    d.record("t", &a, "r2");
    assert_eq!(d.record("t", &a, "r3"), None);
    assert_eq!(CycleDetector::new(0).record("t", &a, "r"), None);
}

/// Records `calls` of `(tool, argument, result)`; the index and finding of each warning.
fn warnings(d: &mut CycleDetector, calls: &[(&str, i64, String)]) -> Vec<(usize, Cycle)> {
    calls
        .iter()
        .enumerate()
        .filter_map(|(i, (tool, arg, result))| {
            d.record(tool, &json!({ "a": arg }), result).map(|c| (i, c))
        })
        .collect()
}

#[test]
fn a_clock_called_six_times_in_a_row_warns_though_its_results_differ() {
    let mut d = CycleDetector::new(3);
    let calls: Vec<_> = (0..6)
        .map(|i| ("current_time", 0, format!("12:00:0{i}")))
        .collect();
    // Threshold 3 + 2: the fifth identical call in a row, and every one after it.
    assert_eq!(
        warnings(&mut d, &calls),
        [(4, Cycle::Repeated(5)), (5, Cycle::Repeated(6))]
    );
}

#[test]
fn legitimate_polling_is_not_a_cycle() {
    // A poll whose arguments move on (a cursor, a page).
    let mut d = CycleDetector::new(3);
    let calls: Vec<_> = (0..10).map(|i| ("poll", i, format!("r{i}"))).collect();
    assert_eq!(warnings(&mut d, &calls), []);
    // The same poll between other work: not in a row.
    let mut d = CycleDetector::new(3);
    let calls: Vec<_> = (0..10)
        .flat_map(|i| [("status", 0, format!("s{i}")), ("work", i, format!("w{i}"))])
        .collect();
    assert_eq!(warnings(&mut d, &calls), []);
    // Four identical calls in a row with changing results stay under the repeat rule.
    let mut d = CycleDetector::new(3);
    let calls: Vec<_> = (0..4).map(|i| ("status", 0, format!("s{i}"))).collect();
    assert_eq!(warnings(&mut d, &calls), []);
}

#[test]
fn the_exact_rule_wins_when_both_apply() {
    let mut d = CycleDetector::new(3);
    let calls: Vec<_> = (0..5).map(|_| ("t", 0, "same".to_string())).collect();
    assert_eq!(
        warnings(&mut d, &calls),
        [
            (2, Cycle::SameResult(3)),
            (3, Cycle::SameResult(4)),
            (4, Cycle::SameResult(5))
        ]
    );
}

/// Records one execution of a call to `t` with argument `x`.
fn ran(r: &mut ReflectionCadence, x: i64) {
    r.record("t", &json!({ "x": x }));
}

#[test]
fn reflection_every_interval() {
    let mut r = ReflectionCadence::new(6);
    let due: Vec<bool> = (0..12)
        .map(|i| {
            ran(&mut r, i);
            r.due()
        })
        .collect();
    assert_eq!(due.iter().filter(|d| **d).count(), 2);
    assert!(due[5] && due[11]);
    let mut r = ReflectionCadence::new(6);
    (0..5).for_each(|i| ran(&mut r, i));
    assert!(!r.due());
    (5..8).for_each(|i| ran(&mut r, i));
    assert!(r.due()); // crossing 6 inside a parallel batch
    (8..11).for_each(|i| ran(&mut r, i));
    assert!(!r.due());
    ran(&mut r, 11);
    assert!(r.due()); // 12
    let mut off = ReflectionCadence::new(0);
    (0..100).for_each(|i| ran(&mut off, i));
    assert!(!off.due());
}

#[test]
fn reflection_counts_distinct_calls_only() {
    // Issue 52's small model: the same call again and again between a few new ones.
    let mut r = ReflectionCadence::new(6);
    for i in 0..5 {
        ran(&mut r, i);
        ran(&mut r, 0);
        r.record("t", &serde_json::from_str(r#"{ "x" : 0 }"#).unwrap());
        assert!(!r.due(), "{} distinct calls", i + 1);
    }
    assert_eq!(
        r.executions(),
        15,
        "the checklist still counts every execution"
    );
    ran(&mut r, 5);
    assert!(r.due(), "the sixth distinct call");
}

#[test]
fn the_last_execution_is_the_last_call_of_the_last_batch() {
    let mut last = LastExecution::default();
    let (a, b) = (json!({"x": 1, "y": 2}), json!({"x": 2}));
    assert!(!last.repeats("t", &a));
    last.record([("u", &b, "s"), ("t", &a, "r")].into_iter());
    assert!(last.repeats("t", &json!({"y": 2, "x": 1})));
    assert!(!last.repeats("u", &b) && !last.repeats("t", &b));
    assert!(last.same_result("r") && !last.same_result("s"));
    // A batch where nothing ran leaves it; the next batch replaces it.
    last.record(std::iter::empty());
    assert!(last.repeats("t", &a));
    last.record([("v", &a, "r")].into_iter());
    assert!(!last.repeats("t", &a) && last.repeats("v", &a));
}
