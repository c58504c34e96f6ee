use super::*;

fn ev(seq: i64, name: &str, data: &str) -> StoredEvent {
    StoredEvent {
        seq,
        name: name.into(),
        data: data.into(),
    }
}

/// (run, first seq, count) of each row.
fn shape(rows: &[Row<'_>]) -> Vec<(String, i64, i64)> {
    rows.iter()
        .map(|r| (r.run_id.to_string(), r.seq, r.n))
        .collect()
}

#[test]
fn consecutive_events_of_one_name_share_a_row() {
    let evs: Vec<StoredEvent> = (1..=5)
        .map(|s| ev(s, "answer", &format!("{{\"d\":{s}}}")))
        .chain([ev(6, "step", "{}"), ev(8, "step", "{}")])
        .collect();
    let mut pairs: Vec<(&str, &StoredEvent)> = evs.iter().map(|e| ("a", e)).collect();
    let other = [ev(1, "step", "{}"), ev(2, "step", "{}")];
    pairs.extend(other.iter().map(|e| ("b", e)));
    let rows = pack(&pairs);
    // A new name, a gap in the ids and another run each start a row.
    let want: Vec<(String, i64, i64)> = [("a", 1, 5), ("a", 6, 1), ("a", 8, 1), ("b", 1, 2)]
        .iter()
        .map(|&(r, s, n)| (r.to_string(), s, n))
        .collect();
    assert_eq!(shape(&rows), want);
    assert_eq!(
        rows[0].data,
        "{\"d\":1}\n{\"d\":2}\n{\"d\":3}\n{\"d\":4}\n{\"d\":5}"
    );
}

#[test]
fn rows_are_capped_and_newlines_stand_alone() {
    let many: Vec<StoredEvent> = (1..=MAX_PACK + 1).map(|s| ev(s, "answer", "{}")).collect();
    let pairs: Vec<(&str, &StoredEvent)> = many.iter().map(|e| ("a", e)).collect();
    assert_eq!(
        shape(&pack(&pairs)),
        vec![("a".into(), 1, MAX_PACK), ("a".into(), MAX_PACK + 1, 1)]
    );

    let big = "x".repeat(MAX_PACK_BYTES - 10);
    let evs = [
        ev(1, "answer", "{}"),
        ev(2, "answer", "two\nlines"),
        ev(3, "answer", "{}"),
        ev(4, "answer", &big),
        ev(5, "answer", "{\"just\":\"too much\"}"),
        ev(6, "answer", "{}"),
    ];
    let pairs: Vec<(&str, &StoredEvent)> = evs.iter().map(|e| ("a", e)).collect();
    let rows = pack(&pairs);
    assert_eq!(
        shape(&rows),
        vec![
            ("a".into(), 1, 1),
            ("a".into(), 2, 1),
            ("a".into(), 3, 2),
            ("a".into(), 5, 2),
        ]
    );
    assert_eq!(rows[1].data, "two\nlines");
}

#[test]
fn repeated_ids_of_a_run_are_dropped() {
    let evs = [
        ev(1, "step", "{}"),
        ev(1, "step", "{\"again\":1}"),
        ev(2, "step", "{}"),
    ];
    let pairs: Vec<(&str, &StoredEvent)> = evs.iter().map(|e| ("a", e)).collect();
    let rows = pack(&pairs);
    assert_eq!(shape(&rows), vec![("a".into(), 1, 2)]);
    assert_eq!(rows[0].data, "{}\n{}");
}

#[test]
fn unpacking_skips_what_was_read_and_rejects_a_miscounted_row() {
    let rec = |seq, n, data: &str| PackedRecord {
        seq,
        n,
        name: "answer".into(),
        data: data.into(),
    };
    let mut out = Vec::new();
    let mut cursor = 2;
    unpack(
        vec![rec(1, 3, "1\n2\n3"), rec(3, 2, "3\n4"), rec(5, 1, "a\nb")],
        &mut cursor,
        &mut out,
    )
    .unwrap();
    let seqs: Vec<(i64, &str)> = out.iter().map(|e| (e.seq, e.data.as_str())).collect();
    assert_eq!(seqs, vec![(3, "3"), (4, "4"), (5, "a\nb")]);
    assert_eq!(cursor, 5);
    let bad = unpack(vec![rec(6, 3, "x\ny")], &mut cursor, &mut out);
    assert!(matches!(bad, Err(StoreError::Corrupt(_))));
}

#[test]
fn a_moved_lease_count_forgets_every_verified_run() {
    let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
    let mut v = Verified::default();
    v.observe(3);
    v.record(3, &[a, b], &[b]);
    assert!(v.holds(&a));
    assert!(!v.holds(&b), "an ended run is forgotten");
    v.observe(3);
    assert!(v.holds(&a));
    v.observe(4);
    assert!(!v.holds(&a), "an epoch changed somewhere: check again");
    // A commit under an older count verifies nothing.
    v.record(3, &[a], &[]);
    assert!(!v.holds(&a));
}
