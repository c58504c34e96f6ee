//! Stream verification (docs/api.md): the invariants every run's SSE stream must satisfy, checked
//! on the events as the client received them (the DAG rules of  in `verify_dag`). Pure, so it is unit-tested on hand-made streams.

use std::collections::HashSet;

use serde_json::Value;

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
    if events.is_empty() {
        return vec!["empty stream".into()];
    }
    let mut errs = if takeovers == 0 {
        check_id_sequence(events)
    } else {
        crate::takeover::check_ids(events, takeovers)
    };
    errs.extend(check_ends(events));
    let mut walk = Walk::new(expect, errs);
    for ev in events {
        walk.event(ev);
    }
    let Walk {
        mut errs, drained, ..
    } = walk;
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

/// Ids 1, 2, 3, … in order; only the first gap is reported, as every later id is off with it.
fn check_id_sequence(events: &[Ev]) -> Vec<String> {
    for (i, ev) in events.iter().enumerate() {
        let want = i as u64 + 1;
        match ev.id.parse::<u64>() {
            Ok(id) if id == want => {}
            _ => {
                return vec![format!(
                    "event #{want} ({}) has id {:?}, expected {want}",
                    ev.name, ev.id
                )];
            }
        }
    }
    Vec::new()
}

/// One `start`, first, and one `done`, last.
fn check_ends(events: &[Ev]) -> Vec<String> {
    let mut errs = Vec::new();
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
    errs
}

/// The answer as the stream has built it so far.
///
/// An answer is open from its `start` (or a delta after a `reset`) to its `reset` or `done`;
/// steps may come only while none is (a reply's text taken back before its tool calls).
#[derive(Default)]
struct Answer {
    open: bool,
    seen: bool,
    text: String,
    done: Option<String>,
}

/// The state carried from event to event: open tool calls, drained interrupts, the answer.
struct Walk<'a> {
    expect: &'a Expect,
    errs: Vec<String>,
    open_calls: HashSet<String>,
    drained: HashSet<String>,
    answer: Answer,
}

impl<'a> Walk<'a> {
    fn new(expect: &'a Expect, errs: Vec<String>) -> Self {
        Walk {
            expect,
            errs,
            open_calls: HashSet::new(),
            drained: HashSet::new(),
            answer: Answer::default(),
        }
    }

    fn event(&mut self, ev: &Ev) {
        if crate::takeover::is_resumed(ev) {
            // The new owner goes on from its checkpoint: a partial answer is discarded.
            self.answer = Answer::default();
        }
        match ev.name.as_str() {
            "step" | "compact" => self.step(ev),
            "answer" => self.answer(ev),
            "done" => self.done(&ev.data),
            _ => {}
        }
    }

    fn step(&mut self, ev: &Ev) {
        if self.answer.open || self.answer.done.is_some() {
            self.errs
                .push(format!("{} event {} after answer start", ev.name, ev.id));
        }
        let call = ev.data["call_id"].as_str().unwrap_or_default().to_string();
        match ev.data["type"].as_str() {
            Some("tool_start") => {
                self.open_calls.insert(call);
            }
            Some("tool_end") if !self.open_calls.remove(&call) => {
                self.errs
                    .push(format!("tool_end {call:?} without a tool_start before it"));
            }
            Some("interrupt") => {
                for id in ev.data["ids"].as_array().into_iter().flatten() {
                    self.drained
                        .insert(id.as_str().unwrap_or_default().to_string());
                }
            }
            _ => {}
        }
    }

    fn answer(&mut self, ev: &Ev) {
        let a = &mut self.answer;
        match ev.data["status"].as_str() {
            Some("start") => {
                if a.open || a.done.is_some() {
                    self.errs.push("second answer start".into());
                }
                (a.open, a.seen) = (true, true);
            }
            Some("delta") => {
                if !a.seen || a.done.is_some() {
                    self.errs
                        .push(format!("answer delta {} outside start..done", ev.id));
                }
                a.open = true;
                a.text
                    .push_str(ev.data["content"].as_str().unwrap_or_default());
            }
            Some("reset") => {
                a.open = false;
                a.text.clear();
            }
            Some("done") => {
                if a.done.is_some() {
                    self.errs.push("second answer done".into());
                }
                let content = ev.data["content"].as_str().unwrap_or_default();
                if content != a.text {
                    self.errs.push(format!(
                        "answer done.content ({} chars) != concatenated deltas ({} chars)",
                        content.len(),
                        a.text.len()
                    ));
                }
                a.done = Some(content.to_string());
            }
            other => self.errs.push(format!("unknown answer status {other:?}")),
        }
    }

    fn done(&mut self, d: &Value) {
        match &self.answer.done {
            None => self
                .errs
                .push("done without a preceding answer done".into()),
            Some(a) if d["answer"].as_str() != Some(a.as_str()) => {
                self.errs.push("done.answer != answer done.content".into())
            }
            Some(_) => {}
        }
        let status = d["status"].as_str().unwrap_or_default();
        self.check_next_run(d, status);
        self.check_status(d, status);
        for u in d["unprocessed_interrupts"].as_array().into_iter().flatten() {
            self.drained
                .insert(u["id"].as_str().unwrap_or_default().to_string());
        }
    }

    /// Interrupts accepted for the next run must be handed to one or reported unprocessed.
    fn check_next_run(&mut self, d: &Value, status: &str) {
        let reported: Vec<&str> = d["unprocessed_interrupts"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|u| u["id"].as_str())
            .collect();
        let lost: Vec<&String> = self
            .expect
            .next_run
            .iter()
            .filter(|i| !reported.contains(&i.as_str()))
            .collect();
        if !lost.is_empty() && d["next_run_id"].as_str().is_none() {
            self.errs.push(format!(
                "interrupts {lost:?} were accepted for the next run, but done ({status}) neither names a next run nor reports them unprocessed"
            ));
        }
    }

    fn check_status(&mut self, d: &Value, status: &str) {
        let expect = self.expect;
        let restart_failure = expect.restart_failure_ok
            && status == "failed"
            && d["error"]
                .as_str()
                .is_some_and(|e| e.contains("interrupted"));
        if !restart_failure && !expect.statuses.is_empty() && !expect.statuses.contains(&status) {
            self.errs.push(format!(
                "status {status:?}, expected one of {:?} (error: {})",
                expect.statuses, d["error"]
            ));
        }
    }
}

#[cfg(test)]
mod tests;
