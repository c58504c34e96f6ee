//! Tests of the plateau window, machine busy share, metric parsing and plans.

use super::*;

fn conv(tokens: &[(u64, f64)]) -> ConvResult {
    ConvResult {
        tokens: tokens.to_vec(),
        ..ConvResult::default()
    }
}

#[test]
fn plateau_keeps_the_tokens_sent_while_every_stream_was_open() {
    let (a, b) = (
        conv(&[(100, 1.0), (200, 2.0), (300, 3.0), (400, 4.0)]),
        conv(&[(250, 5.0), (350, 6.0), (450, 7.0)]),
    );
    let both = [a, b];
    // Window [250, 400]: a's 300 and 400, b's 250 and 350.
    assert_eq!(plateau_bounds(&both), Some((250, 400)));
    assert_eq!(plateau(&both, 250, 400), [3.0, 4.0, 5.0, 6.0]);
    // No overlap, or a conversation without tokens: no plateau.
    assert_eq!(
        plateau_bounds(&[conv(&[(1, 1.0), (2, 1.0)]), conv(&[(5, 1.0)])]),
        None
    );
    assert_eq!(
        plateau_bounds(&[conv(&[(1, 1.0), (9, 1.0)]), conv(&[])]),
        None
    );
}

#[test]
fn machine_busy_is_taken_over_the_samples_spanning_the_window() {
    // (unix µs, busy ticks, total ticks): 50 % busy until 300, then fully busy.
    let samples = [
        (100, 0, 0),
        (200, 50, 100),
        (300, 100, 200),
        (400, 200, 300),
    ];
    assert_eq!(busy_within(&samples, 250, 400), 100.0 * 150.0 / 200.0);
    assert_eq!(busy_within(&samples, 300, 400), 100.0);
    // A window past the samples uses the nearest; too few samples: unknown.
    assert_eq!(busy_within(&samples, 0, 1000), 100.0 * 200.0 / 300.0);
    assert_eq!(busy_within(&samples[..1], 0, 1000), 0.0);
}

#[test]
fn reads_unlabelled_metrics_only() {
    let text = "# TYPE reagent_active_runs gauge\nreagent_active_runs 12\nreagent_active_runs_x 3\nreagent_sse_subscribers 0\n";
    assert_eq!(metric(text, "reagent_active_runs"), Some(12.0));
    assert_eq!(metric(text, "reagent_sse_subscribers"), Some(0.0));
    assert_eq!(metric(text, "reagent_missing"), None);
}

#[test]
fn plans_follow_the_rates_and_seed() {
    let load = Load {
        conversations: 1000,
        mode: "mixed".into(),
        interrupt_rate: 0.3,
        cancel_rate: 0.0,
        ..Load::default()
    };
    let p = plans(&load);
    let interrupts = p.iter().filter(|p| p.interrupt).count();
    assert!((200..400).contains(&interrupts), "{interrupts}");
    assert!(p.iter().all(|p| !p.cancel));
    assert_eq!(p[0].mode, "native");
    assert_eq!(p[1].mode, "json");
    let again = plans(&load);
    assert!(p
        .iter()
        .zip(&again)
        .all(|(a, b)| a.interrupt == b.interrupt));
}
