use super::Seen;

fn seen() -> Seen {
    Seen {
        next: 0,
        last_type: String::new(),
        done: false,
    }
}

fn event(kind: &str, seq: u64) -> String {
    format!(r#"{{"type":"{kind}","sequence_number":{seq}}}"#)
}

#[test]
fn a_stream_cut_and_resumed_after_its_last_number_passes() {
    let mut s = seen();
    s.take("response.created", &event("response.created", 0))
        .unwrap();
    let delta = "response.output_text.delta";
    assert!(s.take(delta, &event(delta, 1)).unwrap());
    // The resume starts after 1.
    s.take(delta, &event(delta, 2)).unwrap();
    s.take("response.completed", &event("response.completed", 3))
        .unwrap();
    s.take("", "[DONE]").unwrap();
    assert!(s.done);
    assert_eq!(s.last_type, "response.completed");
}

#[test]
fn a_repeated_or_lost_event_or_one_after_done_fails() {
    let mut s = seen();
    s.take("response.created", &event("response.created", 0))
        .unwrap();
    assert!(s
        .take("response.in_progress", &event("response.in_progress", 0))
        .is_err());
    assert!(s
        .take("response.in_progress", &event("response.in_progress", 2))
        .is_err());
    assert!(s
        .take("response.in_progress", &event("response.queued", 1))
        .is_err());
    s.take("response.in_progress", &event("response.in_progress", 1))
        .unwrap();
    s.take("", "[DONE]").unwrap();
    assert!(s
        .take("response.completed", &event("response.completed", 2))
        .is_err());
}
