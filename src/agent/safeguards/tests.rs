use super::*;
use serde_json::json;

#[test]
fn third_identical_call_warns_and_repeats() {
    let mut d = CycleDetector::new(3);
    let a = json!({"x": 1, "y": [1, 2]});
    assert_eq!(d.record("t", &a, "r"), None);
    assert_eq!(d.record("t", &a, "r"), None);
    assert_eq!(d.record("t", &a, "r"), Some(3));
    assert_eq!(d.record("t", &a, "r"), Some(4));
}

#[test]
fn key_order_does_not_matter_but_values_and_results_do() {
    let mut d = CycleDetector::new(3);
    let a: Value = serde_json::from_str(r#"{"a":1,"b":2}"#).unwrap();
    let b: Value = serde_json::from_str(r#"{ "b": 2, "a": 1 }"#).unwrap();
    d.record("t", &a, "r");
    d.record("t", &b, "r");
    assert_eq!(d.record("t", &a, "r"), Some(3));

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

#[test]
fn reflection_every_interval() {
    let mut r = ReflectionCadence::new(6);
    let due: Vec<bool> = (0..12).map(|_| r.add(1)).collect();
    assert_eq!(due.iter().filter(|d| **d).count(), 2);
    assert!(due[5] && due[11]);
    let mut r = ReflectionCadence::new(6);
    assert!(!r.add(5));
    assert!(r.add(3)); // crossing 6 inside a parallel batch
    assert!(!r.add(3));
    assert!(r.add(1)); // 12
    assert!(!ReflectionCadence::new(0).add(100));
}
