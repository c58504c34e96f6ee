use super::windows::{decode_windows, encode_windows, window_ops, WindowOp};
use super::*;

#[test]
fn hold_windows_read_back() {
    let w = vec![("day".to_string(), 5), ("month".to_string(), -7)];
    assert_eq!(decode_windows(&encode_windows(&w)), w);
}

fn hold(windows: &[(&str, i64)], tokens: i64) -> Hold {
    Hold {
        id: Uuid::new_v4(),
        tenant: "t".into(),
        windows: windows.iter().map(|(k, s)| (k.to_string(), *s)).collect(),
        tokens,
        nanos: 10 * tokens,
    }
}

fn settled(hold: &Hold, prompt: i64) -> Settlement {
    Settlement {
        hold: Some(hold.clone()),
        usage: CallUsage {
            tenant: "t".into(),
            prompt_tokens: prompt,
            completion_tokens: 1,
            cost_nanos: 7,
            ..CallUsage::default()
        },
        at: 0,
    }
}

/// The settlement of one call rides on the next call's reservation in the same window: one
/// statement that adds the spend, gives the old hold back and takes the new one under the limit.
#[test]
fn a_settlement_and_the_next_reservation_share_one_statement_per_window() {
    let old = hold(&[("day", 1), ("month", 0)], 100);
    let limits = [
        WindowLimit {
            kind: "day",
            starts_at: 1,
            tokens: Some(1_000),
            nanos: None,
        },
        WindowLimit {
            kind: "month",
            starts_at: 0,
            tokens: None,
            nanos: Some(5_000),
        },
    ];
    let r = Reservation {
        tenant: "t",
        run_id: Uuid::new_v4(),
        windows: &limits,
        tokens: 60,
        nanos: 600,
    };
    let ops = window_ops(&[settled(&old, 20)], &[old.id.to_string()], &[], Some(&r));
    let day = WindowOp {
        tenant: "t".into(),
        kind: "day".into(),
        starts_at: 1,
        spent_tokens: 21,
        spent_nanos: 7,
        reserve_tokens: 60,
        reserve_nanos: 600,
        release_tokens: 100,
        release_nanos: 1_000,
        limit_tokens: Some(1_000),
        limit_nanos: None,
    };
    let month = WindowOp {
        kind: "month".into(),
        starts_at: 0,
        limit_tokens: None,
        limit_nanos: Some(5_000),
        ..day.clone()
    };
    assert_eq!(ops, vec![day, month]);
}

/// A hold recovery released already gives nothing back a second time (only the spend is
/// added); the run's leftover holds are released; windows come out day, week, month by start
/// whatever order the holds name them in.
#[test]
fn released_holds_count_once_and_windows_come_in_lock_order() {
    let gone = hold(&[("month", 0), ("day", 9)], 100);
    let left = (
        "t".to_string(),
        encode_windows(&[("week".into(), 3)]),
        40,
        4,
    );
    let ops = window_ops(&[settled(&gone, 5)], &[], &[left], None);
    let got: Vec<(&str, i64, i64, i64)> = ops
        .iter()
        .map(|o| {
            assert_eq!(
                (o.limit_tokens, o.limit_nanos, o.reserve_tokens),
                (None, None, 0)
            );
            (
                o.kind.as_str(),
                o.starts_at,
                o.spent_tokens,
                o.release_tokens,
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![("day", 9, 6, 0), ("week", 3, 0, 40), ("month", 0, 6, 0)]
    );
}

/// Calls without a hold (no budget) only go to the usage ledger.
#[test]
fn a_call_without_a_hold_touches_no_window() {
    let s = Settlement {
        hold: None,
        usage: CallUsage::default(),
        at: 0,
    };
    assert!(window_ops(&[s], &[], &[], None).is_empty());
}
