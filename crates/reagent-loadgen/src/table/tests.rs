use super::*;

fn figures(pairs: &[(&str, f64)]) -> Figures {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

#[test]
fn a_latency_taken_on_a_saturated_machine_is_flagged_not_passed() {
    let m = figures(&[
        ("overhead_native_ms_p50", 0.1),
        ("overhead_native_ms_p99", 0.5),
        ("overhead_native_machine_busy_pct", 40.0),
        ("streams_50_token_ms_p50", 0.2),
        ("streams_50_token_ms_p99", 1.0),
        ("streams_50_machine_busy_pct", 97.0),
        ("streams_50_errors", 0.0),
    ]);
    let t = table(&m, 1, false);
    let row = |needle: &str| t.lines().find(|l| l.contains(needle)).unwrap_or_default();
    assert!(row("native, p50").ends_with("| ✓ |"), "{t}");
    // Within the target, but at 97 % busy: no ✓.
    let fifty = row("at 50 tokens/s each");
    assert!(
        fifty.contains("⚠ saturated") && !fifty.contains('✓'),
        "{fifty}"
    );
    assert!(
        row("| 1000 | 50 |").contains("⚠ saturated (97 % busy)"),
        "{t}"
    );
}

#[test]
fn the_cost_row_reports_the_ratio_to_the_relay() {
    let m = figures(&[
        ("streams_20_cpu_us_per_token", 30.0),
        ("streams_20_cpu_us_per_run", 9000.0),
        ("relay_20_cpu_us_per_token", 12.0),
    ]);
    let row = cost_row(&m);
    assert!(row.contains("30.0 µs = 2.50× the relay's 12.0 µs"), "{row}");
    assert!(row.contains("✗ missed"), "{row}");
    assert!(cost_row(&Figures::new()).contains("not measured"));
}
