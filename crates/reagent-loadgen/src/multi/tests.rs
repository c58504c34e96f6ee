use std::time::{Duration, Instant};

use super::*;

#[test]
fn a_pick_avoids_the_instance_named_when_there_is_another() {
    let t = Targets::new(vec![
        "http://a/".into(),
        "http://b".into(),
        "http://c".into(),
    ]);
    assert_eq!(t.urls[0], "http://a", "trailing slashes are trimmed");
    for _ in 0..200 {
        assert_ne!(t.pick(Some("http://b")), "http://b");
    }
    let alone = Targets::new(vec!["http://a".into()]);
    assert_eq!(alone.pick(Some("http://a")), "http://a");
}

#[test]
fn a_kill_explains_only_its_own_instance_within_the_window() {
    let t = Targets::new(vec!["http://a".into(), "http://b".into()]);
    let before = Instant::now();
    t.note_kill("http://a");
    let after = Instant::now() + Duration::from_millis(1);
    assert_eq!(t.kills(), 1);
    assert!(t.killed_within("http://a", before, after));
    assert!(!t.killed_within("http://b", before, after));
    assert!(!t.killed_within("http://a", after, after + Duration::from_secs(1)));
}
