//! The side requests of a conversation over several instances (`--urls`): an interrupt and a
//! cancel, each through a random instance, and the accounting of accepted interrupts that a
//! run hands to the next one (docs/api.md).

use std::collections::HashSet;

use serde_json::{json, Value};

use crate::event::Ev;
use crate::plan::Side;
use crate::targets::{send_any, Targets};
use crate::verify::Expect;

/// Accepted interrupts that `done` hands to a next run: reported unprocessed, accepted for the
/// next run, or (taken by an instance that did not own the run while its loop was closing)
/// found in the next run's query (docs/api.md). The server deletes them as interrupts when it
/// stores that query; the last kind is moved from `expect.interrupts` to `expect.next_run`.
pub async fn moved(
    http: &reqwest::Client,
    targets: &Targets,
    conv: &str,
    seen: &[Ev],
    expect: &mut Expect,
) -> usize {
    let Some(next) = next_run(seen) else {
        return 0;
    };
    let missing = missing(seen, expect);
    let run = seen[0].data["run_id"].as_str().unwrap_or_default();
    if !missing.is_empty() {
        let query = next_query(http, targets, conv, next)
            .await
            .unwrap_or_default();
        if query.contains(&content(run)) {
            expect.interrupts.retain(|i| !missing.contains(i));
            expect.next_run.extend(missing.iter().cloned());
        }
    }
    handed_on(seen, expect)
}

/// The run `done` announced as next (docs/api.md).
fn next_run(seen: &[Ev]) -> Option<&str> {
    let done = seen.last().filter(|e| e.name == "done")?;
    done.data["next_run_id"].as_str()
}

/// Accepted interrupts neither drained nor reported unprocessed.
fn missing(seen: &[Ev], expect: &Expect) -> Vec<String> {
    let drained = drained(seen);
    let unprocessed = seen.last().map(reported).unwrap_or_default();
    let wanted = |i: &&String| !drained.contains(i.as_str()) && !unprocessed.contains(i.as_str());
    expect.interrupts.iter().filter(wanted).cloned().collect()
}

/// Accepted interrupts handed to the next run as `done` says: reported unprocessed, or
/// accepted for the next run (none when there is no next run).
pub fn handed_on(seen: &[Ev], expect: &Expect) -> usize {
    let Some(done) = seen.last().filter(|_| next_run(seen).is_some()) else {
        return 0;
    };
    let unprocessed = reported(done);
    let drained = drained(seen);
    let reported = expect
        .interrupts
        .iter()
        .filter(|i| !drained.contains(i.as_str()) && unprocessed.contains(i.as_str()));
    reported.count() + expect.next_run.len()
}

/// The interrupt text of a run: unique, so that a next run's query shows whose it is.
pub fn content(run: &str) -> String {
    format!("also, please double-check (run {run})")
}

/// Interrupt ids drained into the loop (`step interrupt`).
fn drained(seen: &[Ev]) -> HashSet<&str> {
    seen.iter()
        .filter(|e| e.name == "step" && e.data["type"] == "interrupt")
        .flat_map(|e| e.data["ids"].as_array().into_iter().flatten())
        .filter_map(Value::as_str)
        .collect()
}

/// Interrupt ids `done` reports unprocessed.
fn reported(done: &Ev) -> HashSet<&str> {
    done.data["unprocessed_interrupts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|u| u["id"].as_str())
        .collect()
}

/// The query of run `next` in conversation `conv`, from any instance.
async fn next_query(
    http: &reqwest::Client,
    targets: &Targets,
    conv: &str,
    next: &str,
) -> Option<String> {
    let (r, _) = send_any(targets, None, |b| {
        http.get(format!("{b}/api/conversations/{conv}"))
    })
    .await
    .ok()?;
    let c: Value = r.json().await.ok()?;
    c["messages"]
        .as_array()?
        .iter()
        .find(|m| m["run_id"] == next && m["kind"] == "query")
        .and_then(|m| m["content"].as_str())
        .map(str::to_string)
}

/// Interrupt, then cancel, each through a random instance (retrying others while one is
/// down); 409 (run already over) is fine.
pub async fn actions(
    http: reqwest::Client,
    urls: Vec<String>,
    run: String,
    conv: String,
    interrupt: bool,
    cancel: bool,
) -> Side {
    let targets = Targets::new(urls);
    let mut side = Side::default();
    if interrupt {
        let r = send_any(&targets, None, |b| {
            http.post(format!("{b}/api/conversations/{conv}/interrupt"))
                .json(&json!({"content": content(&run)}))
        })
        .await;
        match r {
            Ok((r, at)) if r.status() == reqwest::StatusCode::ACCEPTED => {
                side.notes.push(format!("interrupt 202 via {at}"));
                match r.json::<Value>().await {
                    Ok(v) => match v["id"].as_str() {
                        Some(id) if v["next_run"] == true => side.next_run.push(id.into()),
                        Some(id) => side.interrupts.push(id.into()),
                        None => side
                            .errors
                            .push(format!("run {run}: interrupt 202 without id: {v}")),
                    },
                    Err(e) => side.errors.push(format!("run {run}: interrupt reply: {e}")),
                }
            }
            Ok((r, _)) if r.status() == reqwest::StatusCode::CONFLICT => {}
            Ok((r, at)) => side
                .errors
                .push(format!("run {run}: interrupt via {at} → {}", r.status())),
            Err(e) => side.errors.push(format!("run {run}: interrupt: {e:#}")),
        }
    }
    if cancel {
        let r = send_any(&targets, None, |b| {
            http.post(format!("{b}/api/runs/{run}/cancel"))
        })
        .await;
        match r {
            Ok((r, at)) if r.status() == reqwest::StatusCode::ACCEPTED => {
                side.notes.push(format!("cancel 202 via {at}"));
                side.cancel_accepted = true
            }
            Ok((r, _)) if r.status() == reqwest::StatusCode::CONFLICT => {}
            Ok((r, at)) => side
                .errors
                .push(format!("run {run}: cancel via {at} → {}", r.status())),
            Err(e) => side.errors.push(format!("run {run}: cancel: {e:#}")),
        }
    }
    side
}

#[cfg(test)]
mod tests;
