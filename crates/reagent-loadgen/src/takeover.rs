//! The takeover rule of docs/api.md and docs/deployment.md, on the events a client received over several
//! connections: after a broken stream it reconnects (to any instance) with `Last-Event-ID`, so
//! the joined stream must read as one: ids strictly increase, +1 from one event to the next
//! except just before a `step {type:"resumed"}` (the gap a takeover leaves; or before the tail
//! of a run failed at the takeover, having no checkpoint yet), at most one
//! `resumed` per takeover that could have happened, and no id ever with two contents (checked
//! against a full replay taken after the end). Pure, so it is unit-tested on hand-made streams.

use std::collections::HashMap;

use crate::event::Ev;

/// Whether `ev` is the `step {type:"resumed"}` that opens a takeover.
pub fn is_resumed(ev: &Ev) -> bool {
    ev.name == "step" && ev.data["type"] == "resumed"
}

/// Whether the stream ends `failed` because its instance died: then the tail that closes it
/// (from `start` when nothing was stored, else an `answer`) follows the takeover's gap instead
/// of a `resumed` (docs/deployment.md: a run without a usable checkpoint is failed, not resumed).
fn failed_at_takeover(events: &[Ev]) -> bool {
    events.last().is_some_and(|d| {
        d.name == "done"
            && d.data["status"] == "failed"
            && d.data["error"]
                .as_str()
                .is_some_and(|e| e.contains("interrupted"))
    })
}

/// The ids that follow a gap (each the first event after a takeover).
fn after_gaps(events: &[Ev]) -> Vec<u64> {
    let mut prev = 0;
    let mut out = Vec::new();
    for id in events.iter().filter_map(|e| e.id.parse::<u64>().ok()) {
        if id != prev + 1 {
            out.push(id);
        }
        prev = id;
    }
    out
}

/// The id rule on a whole (joined) stream: the first id is 1, each next id is one more, or
/// higher at a takeover — before `resumed`, or before the tail of a run failed there; and no
/// more `resumed`, nor gaps, than `takeovers`.
pub fn check_ids(events: &[Ev], takeovers: usize) -> Vec<String> {
    let mut errs = Vec::new();
    let failed_tail = failed_at_takeover(events);
    let (mut prev, mut resumed, mut gaps) = (0u64, 0usize, 0usize);
    for ev in events {
        let Ok(id) = ev.id.parse::<u64>() else {
            errs.push(format!(
                "event {} has id {:?}, not a number",
                ev.name, ev.id
            ));
            return errs;
        };
        if id <= prev {
            errs.push(format!(
                "id {id} ({}) after id {prev}: ids must strictly increase",
                ev.name
            ));
            return errs;
        }
        if id != prev + 1 {
            let opens_tail =
                failed_tail && (ev.name == "answer" || (ev.name == "start" && prev == 0));
            if !(opens_tail || (is_resumed(ev) && prev > 0)) {
                errs.push(format!(
                    "id {id} ({}) after id {prev}: a gap is allowed only at a takeover, before step resumed (or the tail of a run failed there)",
                    ev.name
                ));
                return errs;
            }
            gaps += 1;
        }
        resumed += usize::from(is_resumed(ev));
        prev = id;
    }
    if resumed > takeovers {
        errs.push(format!(
            "{resumed} step resumed but at most {takeovers} takeovers could have happened during the run"
        ));
    } else if gaps > takeovers {
        errs.push(format!(
            "{gaps} gaps in the ids but at most {takeovers} takeovers could have happened during the run"
        ));
    }
    errs
}

/// Joins what each connection received (in order) into one stream; a connection that gave an
/// id at or below the last one already seen is reported (it did not honour `Last-Event-ID`).
pub fn join(segments: &[Vec<Ev>]) -> (Vec<Ev>, Vec<String>) {
    let mut all: Vec<Ev> = Vec::new();
    let mut errs = Vec::new();
    for (n, seg) in segments.iter().enumerate() {
        let last = all
            .last()
            .and_then(|e| e.id.parse::<u64>().ok())
            .unwrap_or(0);
        if let Some(first) = seg.first() {
            if n > 0 && first.id.parse::<u64>().map_or(true, |id| id <= last) {
                errs.push(format!(
                    "reconnect {n} with Last-Event-ID {last} started at id {:?}",
                    first.id
                ));
            }
        }
        all.extend(seg.iter().cloned());
    }
    (all, errs)
}

/// No id with two contents: every event the client saw is in the full replay under its id with
/// the same name and data, or (streamed but never stored before the owner died) is absent and
/// lies below a takeover's gap in the replay. The replay itself obeys the id rule.
pub fn compare(seen: &[Ev], replay: &[Ev], takeovers: usize) -> Vec<String> {
    let mut errs: Vec<String> = check_ids(replay, takeovers)
        .into_iter()
        .map(|e| format!("replay: {e}"))
        .collect();
    let by_id: HashMap<&str, &Ev> = replay.iter().map(|e| (e.id.as_str(), e)).collect();
    let last_gap = after_gaps(replay).into_iter().max();
    for ev in seen {
        match by_id.get(ev.id.as_str()) {
            Some(r) if r.name == ev.name && r.data == ev.data => {}
            Some(r) => errs.push(format!(
                "id {} was seen as {} {} but replays as {} {}",
                ev.id, ev.name, ev.data, r.name, r.data
            )),
            None => {
                let id = ev.id.parse::<u64>().unwrap_or(u64::MAX);
                if last_gap.is_none_or(|g| g <= id) {
                    errs.push(format!(
                        "id {} ({}) was seen, is not in the replay, and no takeover follows it",
                        ev.id, ev.name
                    ));
                }
            }
        }
    }
    errs.truncate(10);
    errs
}

#[cfg(test)]
mod tests;
