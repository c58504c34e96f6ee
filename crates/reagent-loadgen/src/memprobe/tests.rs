use super::*;

#[test]
fn deltas_are_per_run_between_consecutive_readings() {
    let steps = [("a", 1_100), ("b", 1_300), ("c", 1_250)];
    let d = deltas(1_000, &steps, 10);
    assert_eq!(d, vec![("a", 10.0), ("b", 20.0), ("c", -5.0)]);
    // No runs: divided by one, not by zero.
    assert_eq!(deltas(0, &[("a", 7)], 0), vec![("a", 7.0)]);
}
