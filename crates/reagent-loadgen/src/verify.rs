//! Stream verification (docs/api.md): the invariants every run's SSE stream must satisfy, checked
//! on the events as the client received them (the DAG rules of  in `verify_dag`). Pure, so it is unit-tested on hand-made streams.

use std::collections::HashSet;

use crate::event::Ev;

/// What the client expects of a run.
#[derive(Clone, Debug, Default)]
pub struct Expect {
    /// Acceptable `done.status` values.
    pub statuses: Vec<&'static str>,
    /// Interrupt ids the server accepted (202); each must be drained or reported unprocessed.
    pub interrupts: Vec<String>,
    /// Interrupts accepted with `next_run: true` (docs/api.md): `done` must name the next run.
    pub next_run: Vec<String>,
    /// A `failed` end because the run's instance died (`error` says interrupted) is a valid end.
    pub restart_failure_ok: bool,
}

/// Every violation found, in stream order; empty when the stream is sound.
pub fn verify(events: &[Ev], expect: &Expect) -> Vec<String> {
    verify_with(events, expect, 0)
}

/// [`verify`] for a run that up to `takeovers` takeovers may have moved between instances
/// (docs/deployment.md): the id rule of [`crate::takeover::check_ids`], and after each `resumed` the
/// answer may start over (its `reset`, steps, a new `answer start`).
pub fn verify_with(events: &[Ev], expect: &Expect, takeovers: usize) -> Vec<String> {
    let mut errs = Vec::new();
    if events.is_empty() {
        errs.push("empty stream".into());
        return errs;
    }
    if takeovers == 0 {
        for (i, ev) in events.iter().enumerate() {
            let want = i as u64 + 1;
            match ev.id.parse::<u64>() {
                Ok(id) if id == want => {}
                _ => {
                    errs.push(format!(
                        "event #{want} ({}) has id {:?}, expected {want}",
                        ev.name, ev.id
                    ));
                    break;
                }
            }
        }
    } else {
        errs.extend(crate::takeover::check_ids(events, takeovers));
    }
    if events[0].name != "start" {
        errs.push(format!("first event is {:?}, not start", events[0].name));
    }
    let last = &events[events.len() - 1];
    if last.name != "done" {
        errs.push(format!("last event is {:?}, not done", last.name));
    }
    if events.iter().filter(|e| e.name == "start").count() != 1 {
        errs.push("start is not unique".into());
    }
    if events.iter().filter(|e| e.name == "done").count() != 1 {
        errs.push("done is not unique".into());
    }

    let mut open_calls = HashSet::new();
    let mut drained = HashSet::new();
    // An answer is open from its `start` (or a delta after a `reset`) to its `reset` or `done`;
    // steps may come only while none is (a reply's text taken back before its tool calls).
    let mut answer_open = false;
    let mut answer_seen = false;
    let mut text = String::new();
    let mut answer_done: Option<String> = None;
    for ev in events {
        if crate::takeover::is_resumed(ev) {
            // The new owner goes on from its checkpoint: a partial answer is discarded.
            (answer_open, answer_seen, answer_done) = (false, false, None);
            text.clear();
        }
        match ev.name.as_str() {
            "step" | "compact" => {
                if answer_open || answer_done.is_some() {
                    errs.push(format!("{} event {} after answer start", ev.name, ev.id));
                }
                let call = ev.data["call_id"].as_str().unwrap_or_default().to_string();
                match ev.data["type"].as_str() {
                    Some("tool_start") => {
                        open_calls.insert(call);
                    }
                    Some("tool_end") if !open_calls.remove(&call) => {
                        errs.push(format!("tool_end {call:?} without a tool_start before it"));
                    }
                    Some("interrupt") => {
                        for id in ev.data["ids"].as_array().into_iter().flatten() {
                            drained.insert(id.as_str().unwrap_or_default().to_string());
                        }
                    }
                    _ => {}
                }
            }
            "answer" => match ev.data["status"].as_str() {
                Some("start") => {
                    if answer_open || answer_done.is_some() {
                        errs.push("second answer start".into());
                    }
                    (answer_open, answer_seen) = (true, true);
                }
                Some("delta") => {
                    if !answer_seen || answer_done.is_some() {
                        errs.push(format!("answer delta {} outside start..done", ev.id));
                    }
                    answer_open = true;
                    text.push_str(ev.data["content"].as_str().unwrap_or_default());
                }
                Some("reset") => {
                    answer_open = false;
                    text.clear();
                }
                Some("done") => {
                    if answer_done.is_some() {
                        errs.push("second answer done".into());
                    }
                    let content = ev.data["content"].as_str().unwrap_or_default();
                    if content != text {
                        errs.push(format!(
                            "answer done.content ({} chars) != concatenated deltas ({} chars)",
                            content.len(),
                            text.len()
                        ));
                    }
                    answer_done = Some(content.to_string());
                }
                other => errs.push(format!("unknown answer status {other:?}")),
            },
            "done" => {
                let d = &ev.data;
                match &answer_done {
                    None => errs.push("done without a preceding answer done".into()),
                    Some(a) if d["answer"].as_str() != Some(a.as_str()) => {
                        errs.push("done.answer != answer done.content".into())
                    }
                    Some(_) => {}
                }
                let status = d["status"].as_str().unwrap_or_default();
                let restart_failure = expect.restart_failure_ok
                    && status == "failed"
                    && d["error"]
                        .as_str()
                        .is_some_and(|e| e.contains("interrupted"));
                let reported: Vec<&str> = d["unprocessed_interrupts"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|u| u["id"].as_str())
                    .collect();
                let lost: Vec<&String> = expect
                    .next_run
                    .iter()
                    .filter(|i| !reported.contains(&i.as_str()))
                    .collect();
                if !lost.is_empty() && d["next_run_id"].as_str().is_none() {
                    errs.push(format!(
                        "interrupts {lost:?} were accepted for the next run, but done ({status}) neither names a next run nor reports them unprocessed"
                    ));
                }
                if !restart_failure
                    && !expect.statuses.is_empty()
                    && !expect.statuses.contains(&status)
                {
                    errs.push(format!(
                        "status {status:?}, expected one of {:?} (error: {})",
                        expect.statuses, d["error"]
                    ));
                }
                for u in d["unprocessed_interrupts"].as_array().into_iter().flatten() {
                    drained.insert(u["id"].as_str().unwrap_or_default().to_string());
                }
            }
            _ => {}
        }
    }
    errs.extend(crate::verify_dag::verify_dag(events));
    for id in &expect.interrupts {
        if !drained.contains(id) {
            errs.push(format!(
                "accepted interrupt {id} neither drained nor reported unprocessed"
            ));
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn stream(items: &[(&str, Value)]) -> Vec<Ev> {
        items
            .iter()
            .enumerate()
            .map(|(i, (name, data))| Ev {
                id: (i + 1).to_string(),
                name: name.to_string(),
                data: data.clone(),
            })
            .collect()
    }

    fn good() -> Vec<Ev> {
        stream(&[
            ("start", json!({"run_id": "r"})),
            ("step", json!({"type": "tool_start", "call_id": "c1"})),
            ("step", json!({"type": "tool_end", "call_id": "c1"})),
            ("step", json!({"type": "interrupt", "ids": ["i1"]})),
            ("answer", json!({"status": "start"})),
            ("answer", json!({"status": "delta", "content": "wrong"})),
            ("answer", json!({"status": "reset"})),
            ("answer", json!({"status": "delta", "content": "he"})),
            ("answer", json!({"status": "delta", "content": "llo"})),
            (
                "answer",
                json!({"status": "done", "content": "hello", "fallback": true}),
            ),
            (
                "done",
                json!({"status": "completed", "answer": "hello",
                "unprocessed_interrupts": [{"id": "i2", "content": "x"}]}),
            ),
        ])
    }

    fn expect() -> Expect {
        Expect {
            statuses: vec!["completed"],
            interrupts: vec!["i1".into(), "i2".into()],
            ..Expect::default()
        }
    }

    #[test]
    fn a_sound_stream_passes() {
        assert_eq!(verify(&good(), &expect()), Vec::<String>::new());
    }

    #[test]
    fn each_violation_is_reported() {
        let mut gap = good();
        gap[3].id = "5".into();
        assert!(verify(&gap, &expect())[0].contains("expected 4"));

        let mut no_done = good();
        no_done.pop();
        let errs = verify(&no_done, &expect());
        assert!(errs.iter().any(|e| e.contains("not done")), "{errs:?}");

        let mut swapped = good();
        swapped.swap(1, 2);
        for (i, e) in swapped.iter_mut().enumerate() {
            e.id = (i + 1).to_string();
        }
        let errs = verify(&swapped, &expect());
        assert!(
            errs.iter().any(|e| e.contains("without a tool_start")),
            "{errs:?}"
        );

        let mut bad_text = good();
        bad_text[8].data = json!({"status": "delta", "content": "LO"});
        let errs = verify(&bad_text, &expect());
        assert!(
            errs.iter().any(|e| e.contains("concatenated deltas")),
            "{errs:?}"
        );

        let mut bad_answer = good();
        bad_answer[10].data["answer"] = json!("other");
        let errs = verify(&bad_answer, &expect());
        assert!(errs.iter().any(|e| e.contains("done.answer")), "{errs:?}");

        let wrong_status = Expect {
            statuses: vec!["cancelled"],
            ..expect()
        };
        assert!(verify(&good(), &wrong_status)[0].contains("status"));

        let lost = Expect {
            interrupts: vec!["i3".into()],
            ..expect()
        };
        assert!(verify(&good(), &lost)[0].contains("i3"));

        let mut late_step = good();
        late_step.insert(5, late_step[1].clone());
        for (i, e) in late_step.iter_mut().enumerate() {
            e.id = (i + 1).to_string();
        }
        let errs = verify(&late_step, &expect());
        assert!(
            errs.iter().any(|e| e.contains("after answer start")),
            "{errs:?}"
        );

        assert_eq!(verify(&[], &expect()), ["empty stream"]);
    }

    #[test]
    fn steps_may_follow_an_answer_taken_back() {
        let events = stream(&[
            ("start", json!({"run_id": "r"})),
            ("answer", json!({"status": "start", "source": "reply"})),
            (
                "answer",
                json!({"status": "delta", "content": "Let me check."}),
            ),
            ("answer", json!({"status": "reset"})),
            ("step", json!({"type": "tool_start", "call_id": "c1"})),
            ("step", json!({"type": "tool_end", "call_id": "c1"})),
            ("answer", json!({"status": "start", "source": "reply"})),
            ("answer", json!({"status": "delta", "content": "hello"})),
            (
                "answer",
                json!({"status": "done", "content": "hello", "fallback": false}),
            ),
            (
                "done",
                json!({"status": "completed", "answer": "hello", "unprocessed_interrupts": []}),
            ),
        ]);
        let expect = Expect {
            statuses: vec!["completed"],
            ..Expect::default()
        };
        assert_eq!(verify(&events, &expect), Vec::<String>::new());
        let mut open = events.clone();
        open.remove(3);
        for (i, e) in open.iter_mut().enumerate() {
            e.id = (i + 1).to_string();
        }
        let errs = verify(&open, &expect);
        assert!(
            errs.iter().any(|e| e.contains("after answer start")),
            "{errs:?}"
        );
        assert!(
            errs.iter().any(|e| e.contains("second answer start")),
            "{errs:?}"
        );
    }
}
