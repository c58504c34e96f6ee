//! Tests of the cursor codec and of the search statement.

use super::search::{fts_phrase, like_pattern, search_sql};
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

#[test]
fn patterns_escape_what_the_engines_would_read() {
    assert_eq!(like_pattern("50%_a\\b"), "%50\\%\\_a\\\\b%");
    assert_eq!(fts_phrase("say \"hi\""), "\"say \"\"hi\"\"\"");
}

#[test]
fn short_words_skip_the_trigram_index_on_sqlite() {
    let words = ["ab".to_string(), "abc".to_string()];
    let (sql, binds) = search_sql(true, "o", &words, None, 11);
    assert!(sql.contains("m.content LIKE $2"), "{sql}");
    assert!(sql.contains("messages_fts MATCH $4"), "{sql}");
    assert!(sql.ends_with("LIMIT $5"), "{sql}");
    assert_eq!(binds.len(), 5);
    let (sql, binds) = search_sql(false, "o", &words, Some((1, "x".into())), 11);
    assert!(!sql.contains("MATCH"), "{sql}");
    assert!(sql.contains("c.title ILIKE $5"), "{sql}");
    assert_eq!(binds.len(), 6);
}
