//! Tests of the cursor codec.

use super::*;

#[test]
fn cursor_round_trips_and_rejects_garbage() {
    let id = Uuid::new_v4();
    let (micros, parsed) = decode_cursor(&format!("1700000000123456_{id}")).unwrap();
    assert_eq!(micros, 1_700_000_000_123_456);
    assert_eq!(parsed, id.to_string());
    for bad in ["", "abc", "12_notauuid", &format!("x_{id}"), "12"] {
        assert!(
            matches!(decode_cursor(bad), Err(StoreError::InvalidCursor)),
            "{bad}"
        );
    }
}
