use super::*;

fn sample(cpu_us_per_run: f64, runs_per_s: f64) -> Sample {
    Sample {
        cpu_us_per_run,
        runs_per_s,
        ..Sample::default()
    }
}

#[test]
fn ratios_are_the_api_agents_over_the_configured_ones() {
    // Three rounds; the API agent's blocks cost 10 %, 0 % and 30 % more than their pair's.
    let configured = vec![
        sample(100.0, 50.0),
        sample(200.0, 40.0),
        sample(100.0, 60.0),
    ];
    let made = vec![
        sample(110.0, 45.0),
        sample(200.0, 40.0),
        sample(130.0, 50.0),
    ];
    let r = ratios(&[configured, made]);
    // Medians: 130 / 100 CPU, 45 / 50 runs/s.
    assert!((r.cpu - 1.3).abs() < 1e-9, "{r:?}");
    assert!((r.runs_per_s - 0.9).abs() < 1e-9, "{r:?}");
    let (low, mid, high) = r.rounds;
    assert!((low - 1.0).abs() < 1e-9 && (mid - 1.1).abs() < 1e-9 && (high - 1.3).abs() < 1e-9);
}
