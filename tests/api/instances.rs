//! Several instances on one PostgreSQL database (docs/deployment.md, issue 21), with real `reagent`
//! processes ([`Cluster`]) on a fresh database per test.
//!
//! - [`commands`]: every request about a run (stream, interrupt, recall, approval, cancel,
//!   delete) through an instance that does not run it.
//! - [`takeover`]: kill -9 of a run's owner in its tool loop → another instance takes the run
//!   over within the lease TTL and finishes it; a client resuming with `Last-Event-ID` on a
//!   survivor sees one `resumed` naming the taker, rising ids, one `done`. SIGSTOP of the owner
//!   past the TTL, then SIGCONT → its writes are refused (fenced), the run ends exactly once.
//!   An instance restarted under its own name resumes its runs at once.
//! - [`tools`]: a tool call in flight at the owner's death is not called again by the taker
//!   unless the tool is `idempotent = true`.
//! - [`at_most_once`]: kill -9 or SIGSTOP of the caller as a non-idempotent call arrives at
//!   the tool: the call is never made twice, on PostgreSQL (takeover) and SQLite (restart).
//! - [`budgets`]: many concurrent runs of one tenant through two instances against a small
//!   day budget: the window never admits past its limit, no reservation is left.
//! - [`agents`]: an agent made and changed through one instance is what the other's next run
//!   uses, no restart (docs/api.md "Agents").
//! - [`listing`]: `GET /api/instances` lists the live instances with the runs each owns; a
//!   SIGTERMed instance leaves the list and hands its runs over at once (not after the TTL).
//!
//! Leases here: `REAGENT_LEASE_TTL_S=2`, `REAGENT_LEASE_RENEW_S=1` (whole seconds; the smallest
//! the settings allow).

mod agents;
mod at_most_once;
mod budgets;
mod commands;
mod listing;
mod takeover;
mod tools;

use std::time::Duration;

use reagent::store::Store;
use uuid::Uuid;

use crate::support::child::{Server, TIMEOUT};
use crate::support::sse::{assert_seen_replayed, Sse};

/// The short lease every test here runs with.
const LEASE_ENV: [(&str, &str); 2] = [("REAGENT_LEASE_TTL_S", "2"), ("REAGENT_LEASE_RENEW_S", "1")];
const TTL: Duration = Duration::from_secs(2);

/// Starts a run on `server` in a new conversation and follows its stream until `stop`; returns
/// the run id and what the client saw.
async fn watch(server: &Server, stop: impl FnMut(&Sse) -> bool) -> (Uuid, Vec<Sse>) {
    let (run, seen) = server.watch("work through some tools", stop).await;
    (Uuid::parse_str(&run).unwrap(), seen)
}

/// The run's events after `after` from `server`, as a client that resumes with `Last-Event-ID`
/// whenever its stream ends before `done` (an instance that does not execute the run replays
/// what is stored); every connection's events, in order.
async fn events_until_done(server: &Server, run: Uuid, after: u64) -> Vec<Sse> {
    server
        .events_until_done(&run.to_string(), Some(after))
        .await
}

/// Waits until an instance other than `from` holds the run's lease at a later epoch; returns
/// that instance's name and how long it took.
async fn taken_over(store: &Store, run: Uuid, from: &str) -> (String, Duration) {
    let started = tokio::time::Instant::now();
    loop {
        let states = store.lease_states(&[run]).await.unwrap();
        if let Some((_, Some(owner), epoch)) = states.first() {
            if owner != from && *epoch >= 2 {
                return (owner.clone(), started.elapsed());
            }
        }
        assert!(
            started.elapsed() < TIMEOUT,
            "run {run} was never taken over"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until the run's row is no longer `running`.
async fn finished(store: &Store, run: Uuid) {
    crate::support::eventually("the run ends", || async {
        store
            .get_run_any(run)
            .await
            .unwrap()
            .is_some_and(|r| r.status.as_str() != "running")
    })
    .await;
}

/// Ids strictly increase; no id a client saw names other content in `replay` (unless an answer
/// `reset` after it discards it, as after any crash); exactly one `done`, last.
fn check_stream(run: Uuid, seen: &[Sse], replay: &[Sse]) {
    let ids: Vec<u64> = replay.iter().map(|e| e.id).collect();
    assert!(
        ids.windows(2).all(|w| w[0] < w[1]),
        "run {run}: ids rise: {ids:?}"
    );
    assert_seen_replayed(&run.to_string(), seen, replay);
    let dones = replay.iter().filter(|e| e.event == "done").count();
    assert_eq!(dones, 1, "run {run}: one done");
    assert_eq!(replay.last().map(|e| e.event.as_str()), Some("done"));
}

/// The whole replay of a finished run from `server`.
async fn replay(server: &Server, run: Uuid) -> Vec<Sse> {
    events_until_done(server, run, 0).await
}

/// `/metrics` of `server`.
async fn metrics(server: &Server) -> String {
    reqwest::get(server.url("/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}
