use super::*;

#[test]
fn exponential_doubles_and_is_capped() {
    let b = Backoff::default();
    assert_eq!(b.exponential(0), Duration::from_millis(250));
    assert_eq!(b.exponential(1), Duration::from_millis(500));
    assert_eq!(b.exponential(3), Duration::from_secs(2));
    assert_eq!(b.exponential(5), Duration::from_secs(8));
    assert_eq!(b.exponential(u32::MAX), Duration::from_secs(8));
}

#[test]
fn jittered_delay_stays_between_half_and_full() {
    let b = Backoff::default();
    for retry in 0..8 {
        let full = b.exponential(retry);
        for _ in 0..50 {
            let d = b.delay(retry, None);
            assert!(
                d >= full / 2 && d <= full,
                "retry {retry}: {d:?} vs {full:?}"
            );
        }
    }
}

#[test]
fn jitter_actually_varies() {
    let b = Backoff::with_base(Duration::from_secs(1));
    let delays: std::collections::HashSet<_> = (0..20).map(|_| b.delay(2, None)).collect();
    assert!(delays.len() > 1);
}

#[test]
fn retry_after_wins_and_is_capped() {
    let b = Backoff::with_base(Duration::from_millis(1));
    assert_eq!(
        b.delay(0, Some(Duration::from_secs(2))),
        Duration::from_secs(2)
    );
    assert_eq!(
        b.delay(0, Some(Duration::from_secs(3600))),
        Duration::from_secs(60)
    );
    // `Retry-After: 0` never fires at once: it waits the jitter's lower bound.
    assert_eq!(b.delay(0, Some(Duration::ZERO)), Duration::from_micros(500));
    let b = Backoff::with_base(Duration::from_secs(1));
    assert_eq!(b.delay(2, Some(Duration::ZERO)), Duration::from_secs(2));
    assert_eq!(
        b.delay(2, Some(Duration::from_secs(3))),
        Duration::from_secs(3)
    );
}

#[test]
fn parses_seconds_and_http_dates() {
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_445_412_480); // 07:28:00 GMT
    assert_eq!(parse_retry_after(" 7 ", now), Some(Duration::from_secs(7)));
    assert_eq!(
        parse_retry_after("1.5", now),
        Some(Duration::from_millis(1500))
    );
    assert_eq!(
        parse_retry_after("Wed, 21 Oct 2015 07:28:30 GMT", now),
        Some(Duration::from_secs(30))
    );
    assert_eq!(
        parse_retry_after("Wed, 21 Oct 2015 07:00:00 GMT", now),
        Some(Duration::ZERO)
    );
    assert_eq!(parse_retry_after("soon", now), None);
    assert_eq!(parse_retry_after("-3", now), None);
}
