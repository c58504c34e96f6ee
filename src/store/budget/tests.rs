use super::windows::{decode_windows, encode_windows, Tally, WindowRow};
use super::*;

#[test]
fn hold_windows_read_back() {
    let w = vec![("day".to_string(), 5), ("month".to_string(), -7)];
    assert_eq!(decode_windows(&encode_windows(&w)), w);
}

fn row(kind: &str, starts_at: i64, spent: i64, reserved: i64) -> WindowRow {
    WindowRow {
        tenant: "t".into(),
        spend: WindowSpend {
            window_kind: kind.into(),
            starts_at,
            spent_tokens: spent,
            spent_nanos: 10 * spent,
            reserved_tokens: reserved,
            reserved_nanos: 10 * reserved,
            warned: 0,
        },
    }
}

fn limit(kind: &'static str, starts_at: i64, tokens: i64) -> WindowLimit {
    WindowLimit {
        kind,
        starts_at,
        tokens: Some(tokens),
        nanos: None,
    }
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

/// Reservations of one batch are checked one after the other against the totals so far: the
/// window never takes more than its limit, however many ask in the same transaction.
#[test]
fn a_batch_admits_reservations_in_order_up_to_the_limit() {
    let mut t = Tally::new(vec![row("day", 1, 100, 0)]);
    let day = [limit("day", 1, 400)];
    let granted: Vec<bool> = (0..4).map(|_| t.admit("t", &day, 100, 0)).collect();
    assert_eq!(granted, [true, true, true, false]);
    let key = ("t".to_string(), "day".to_string(), 1);
    assert_eq!(t.deltas(), vec![(key.clone(), [0, 0, 300, 0])]);
    // A smaller call still fits the room left.
    assert!(!t.admit("t", &day, 1, 0));
    assert_eq!(t.totals([&key])[0].reserved_tokens, 300);
}

/// The settlement of one call and the next call's reservation in the same batch: the spend is
/// added, the old hold given back, and the new one checked against the result.
#[test]
fn settlements_and_releases_apply_before_the_reservations() {
    let mut t = Tally::new(vec![row("day", 1, 0, 300), row("month", 0, 0, 300)]);
    let old = hold(&[("day", 1), ("month", 0)], 300);
    t.spend(&old, 20, 7);
    t.release("t", &old.windows, old.tokens, old.nanos);
    assert!(t.admit("t", &[limit("day", 1, 400), limit("month", 0, 400)], 380, 0));
    let deltas: Vec<[i64; 4]> = t.deltas().into_iter().map(|(_, d)| d).collect();
    assert_eq!(deltas, vec![[20, 7, 80, -3_000]; 2]);
}

/// A reservation that fits one of its windows but not another takes nothing in either.
#[test]
fn a_reservation_refused_in_one_window_takes_nothing() {
    let mut t = Tally::new(vec![row("day", 1, 0, 0), row("week", 2, 900, 0)]);
    let limits = [limit("day", 1, 1_000), limit("week", 2, 1_000)];
    assert!(!t.admit("t", &limits, 200, 0));
    assert!(t.deltas().is_empty());
    // A window the batch did not read refuses (it was not locked).
    assert!(!t.admit("t", &[limit("month", 0, 1_000)], 1, 0));
}

/// A limit of cost alone leaves tokens free, and the reverse.
#[test]
fn each_limit_checks_its_own_kind() {
    let mut t = Tally::new(vec![row("day", 1, 0, 0)]);
    let cost_only = WindowLimit {
        kind: "day",
        starts_at: 1,
        tokens: None,
        nanos: Some(500),
    };
    assert!(t.admit("t", std::slice::from_ref(&cost_only), 1_000_000, 500));
    assert!(!t.admit("t", &[cost_only], 0, 1));
}
