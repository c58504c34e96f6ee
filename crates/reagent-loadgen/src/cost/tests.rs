use super::*;

#[test]
fn per_unit_cost_is_cpu_over_count() {
    assert_eq!(us_per(0.5, 1000), Some(500.0));
    assert_eq!(us_per(2.0, 0), None);
    assert_eq!(us_per(f64::NAN, 3), None);
}

#[test]
fn ratio_needs_both_and_a_positive_floor() {
    assert_eq!(ratio(Some(30.0), Some(20.0)), Some(1.5));
    assert_eq!(ratio(Some(30.0), None), None);
    assert_eq!(ratio(None, Some(20.0)), None);
    assert_eq!(ratio(Some(30.0), Some(0.0)), None);
}

#[test]
fn saturation_flag_starts_at_ninety_percent() {
    assert!(!saturated(89.9));
    assert!(saturated(90.0));
    assert!(saturated(99.0));
    assert_eq!(verdict(true, 50.0), "✓");
    assert_eq!(verdict(false, 50.0), "✗ missed");
    // Saturated overrides both: the figure measures queues, pass or fail.
    assert!(verdict(true, 95.0).starts_with("⚠ saturated"));
    assert!(verdict(false, 95.0).contains("95 %"));
    assert_eq!(show_us(Some(1.26)), "1.3 µs");
    assert_eq!(show_us(None), "n/a");
}
