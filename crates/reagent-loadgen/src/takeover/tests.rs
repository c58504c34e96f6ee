use serde_json::{json, Value};

use super::*;
use crate::verify::{verify_with, Expect};

fn ev(id: u64, name: &str, data: Value) -> Ev {
    Ev {
        id: id.to_string(),
        name: name.to_string(),
        data,
    }
}

/// What a client on the owner saw before it died (ids 1..=5, an answer half streamed), and
/// what it got after reconnecting with `Last-Event-ID: 5` elsewhere: the takeover's events
/// from 70 on (the old owner had reserved ids up to 69), `resumed`, `reset`, a new answer.
fn before() -> Vec<Ev> {
    vec![
        ev(1, "start", json!({"run_id": "r"})),
        ev(2, "step", json!({"type": "tool_start", "call_id": "c1"})),
        ev(3, "step", json!({"type": "tool_end", "call_id": "c1"})),
        ev(4, "answer", json!({"status": "start"})),
        ev(5, "answer", json!({"status": "delta", "content": "hal"})),
    ]
}

fn after() -> Vec<Ev> {
    vec![
        ev(
            70,
            "step",
            json!({"type": "resumed", "iteration": 2, "instance": "b"}),
        ),
        ev(71, "answer", json!({"status": "reset"})),
        ev(72, "step", json!({"type": "thinking", "iteration": 2})),
        ev(73, "answer", json!({"status": "start"})),
        ev(74, "answer", json!({"status": "delta", "content": "whole"})),
        ev(
            75,
            "answer",
            json!({"status": "done", "content": "whole", "fallback": false}),
        ),
        ev(
            76,
            "done",
            json!({"status": "completed", "answer": "whole", "unprocessed_interrupts": []}),
        ),
    ]
}

fn expect() -> Expect {
    Expect {
        statuses: vec!["completed"],
        ..Expect::default()
    }
}

fn joined() -> Vec<Ev> {
    let (all, errs) = join(&[before(), after()]);
    assert_eq!(errs, Vec::<String>::new());
    all
}

#[test]
fn a_takeover_stream_passes_with_one_takeover() {
    assert_eq!(verify_with(&joined(), &expect(), 1), Vec::<String>::new());
    // The replay after the end: ids 1..=3 stored, 4 and 5 were streamed and lost.
    let mut replay = before()[..3].to_vec();
    replay.extend(after());
    assert_eq!(compare(&joined(), &replay, 1), Vec::<String>::new());
}

#[test]
fn without_a_takeover_the_same_stream_fails() {
    let errs = verify_with(&joined(), &expect(), 0);
    assert!(errs.iter().any(|e| e.contains("expected 6")), "{errs:?}");
    let errs = check_ids(&joined(), 0);
    assert!(errs.iter().any(|e| e.contains("at most 0")), "{errs:?}");
}

#[test]
fn a_reused_id_fails() {
    // The reconnect replayed id 5 again (with other content): not strictly increasing.
    let mut again = after();
    again.insert(0, ev(5, "answer", json!({"status": "reset"})));
    let (all, errs) = join(&[before(), again]);
    assert!(
        errs.iter().any(|e| e.contains("Last-Event-ID 5")),
        "{errs:?}"
    );
    let errs = check_ids(&all, 1);
    assert!(errs.iter().any(|e| e.contains("strictly")), "{errs:?}");
}

#[test]
fn an_id_with_two_contents_across_reconnects_fails() {
    // The replay stored id 5 as something else than what the client saw under it.
    let mut replay = before();
    replay[4] = ev(5, "answer", json!({"status": "delta", "content": "other"}));
    replay.extend(after());
    let errs = compare(&joined(), &replay, 1);
    assert!(errs.iter().any(|e| e.contains("id 5 was seen")), "{errs:?}");
}

#[test]
fn a_seen_id_missing_from_the_replay_needs_a_resumed_above_it() {
    // Id 5 was seen, the replay lacks it, and no takeover follows: an event was lost.
    let replay = before()[..4].to_vec();
    let errs = compare(&before(), &replay, 1);
    assert!(
        errs.iter().any(|e| e.contains("no takeover follows")),
        "{errs:?}"
    );
}

#[test]
fn two_resumed_for_one_takeover_fail() {
    // A second `resumed` with no second takeover (no kill, no reconnect) during the run.
    let mut twice = after();
    twice.insert(
        3,
        ev(
            90,
            "step",
            json!({"type": "resumed", "iteration": 2, "instance": "c"}),
        ),
    );
    for (i, e) in twice.iter_mut().enumerate().skip(4) {
        e.id = (91 + i - 4).to_string();
    }
    let (all, _) = join(&[before(), twice]);
    let errs = check_ids(&all, 1);
    assert!(
        errs.iter().any(|e| e.contains("2 step resumed")),
        "{errs:?}"
    );
    assert_eq!(check_ids(&all, 2), Vec::<String>::new());
}

#[test]
fn a_gap_not_followed_by_resumed_fails() {
    let mut gap = after();
    gap.remove(0);
    let (all, _) = join(&[before(), gap]);
    let errs = check_ids(&all, 1);
    assert!(
        errs.iter()
            .any(|e| e.contains("allowed only at a takeover")),
        "{errs:?}"
    );
}

#[test]
fn the_end_after_a_takeover_is_still_checked() {
    // No `done` after the takeover: not a valid end.
    let mut cut = joined();
    cut.pop();
    let errs = verify_with(&cut, &expect(), 1);
    assert!(errs.iter().any(|e| e.contains("not done")), "{errs:?}");
    // The resumed answer must still match its own deltas.
    let mut bad = joined();
    bad[9].data["content"] = json!("halwhole");
    let errs = verify_with(&bad, &expect(), 1);
    assert!(
        errs.iter().any(|e| e.contains("concatenated deltas")),
        "{errs:?}"
    );
}

#[test]
fn a_failed_end_at_a_takeover_passes_only_when_allowed() {
    let mut failed = joined();
    let last = failed.len() - 1;
    failed[last].data = json!({"status": "failed", "answer": "whole",
        "error": "interrupted by server restart", "unprocessed_interrupts": []});
    assert!(!verify_with(&failed, &expect(), 1).is_empty());
    let lenient = Expect {
        restart_failure_ok: true,
        ..expect()
    };
    assert_eq!(verify_with(&failed, &lenient, 1), Vec::<String>::new());
}

#[test]
fn an_interrupt_accepted_for_the_next_run_needs_next_run_id() {
    let late = Expect {
        next_run: vec!["i9".into()],
        ..expect()
    };
    let errs = verify_with(&joined(), &late, 1);
    assert!(
        errs.iter().any(|e| e.contains("neither names a next run")),
        "{errs:?}"
    );
    let mut named = joined();
    let last = named.len() - 1;
    named[last].data["next_run_id"] = json!("r2");
    assert_eq!(verify_with(&named, &late, 1), Vec::<String>::new());
    // A cancelled run starts no next run: it must report the follow-up unprocessed instead.
    let mut reported = joined();
    reported[last].data["unprocessed_interrupts"] = json!([{"id": "i9", "content": "x"}]);
    assert_eq!(verify_with(&reported, &late, 1), Vec::<String>::new());
}

/// Killed before anything was stored and without a checkpoint: the run is failed at the
/// takeover, its whole stream the failure tail above the old owner's reserved ids.
fn failed_tail(first: u64) -> Vec<Ev> {
    vec![
        ev(first, "start", json!({"run_id": "r"})),
        ev(first + 1, "answer", json!({"status": "start"})),
        ev(first + 2, "answer", json!({"status": "reset"})),
        ev(
            first + 3,
            "answer",
            json!({"status": "delta", "content": "Sorry"}),
        ),
        ev(
            first + 4,
            "answer",
            json!({"status": "done", "content": "Sorry", "fallback": true}),
        ),
        ev(
            first + 5,
            "done",
            json!({"status": "failed", "answer": "Sorry",
                "error": "interrupted by server restart", "unprocessed_interrupts": []}),
        ),
    ]
}

#[test]
fn a_run_failed_at_a_takeover_may_start_above_the_reserved_ids() {
    let lenient = Expect {
        restart_failure_ok: true,
        ..expect()
    };
    assert_eq!(
        verify_with(&failed_tail(1025), &lenient, 1),
        Vec::<String>::new()
    );
    // Not without a takeover, and not for a run that did not fail there.
    assert!(!check_ids(&failed_tail(1025), 0).is_empty());
    let mut completed = failed_tail(1025);
    completed[5].data =
        json!({"status": "completed", "answer": "Sorry", "unprocessed_interrupts": []});
    let errs = check_ids(&completed, 1);
    assert!(
        errs.iter()
            .any(|e| e.contains("allowed only at a takeover")),
        "{errs:?}"
    );
}

#[test]
fn two_gaps_for_one_takeover_fail() {
    // A stream failed at its second takeover: a resumed gap, then the failed tail's gap.
    let mut two = before();
    two.push(ev(
        70,
        "step",
        json!({"type": "resumed", "iteration": 2, "instance": "b"}),
    ));
    two.extend(failed_tail(140).into_iter().skip(1));
    let errs = check_ids(&two, 1);
    assert!(errs.iter().any(|e| e.contains("2 gaps")), "{errs:?}");
    assert_eq!(check_ids(&two, 2), Vec::<String>::new());
}
