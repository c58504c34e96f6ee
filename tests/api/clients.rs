//! Hostile and unlucky SSE clients (docs/api.md): a run belongs to the run manager, and a client
//! only holds a cursor into its event log, so
//! - disconnecting at any phase (before the first event, during the steps, during the answer)
//!   never stops, loses or corrupts the run, and the `reagent_sse_subscribers` gauge returns to 0;
//! - a storm of reconnects with `Last-Event-ID` at random points resumes exactly after the
//!   given id every time;
//! - a reader that never reads blocks neither the run nor other subscribers, and when it
//!   finally reads it gets every event in order (it was a cursor, not a growing queue);
//! - 1 000 idle subscribers of one long run all get every event, `/healthz` keeps answering and
//!   the gauge counts them exactly.
//!
//! Nothing here asserts on timing: "eventually" waits poll a condition under a generous
//! deadline, and the run's progress is gated by the test (`gate` tool), not by sleeps.
//!
//! By topic: [`disconnect`], [`readers`], [`reconnect`].

mod disconnect;
mod readers;
mod reconnect;

use std::future::ready;
use std::time::Duration;

use futures::StreamExt;
use rand::{Rng, SeedableRng};
use reagent::testing::scripted::Turn;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use uuid::Uuid;

use crate::support::app::{error_code, TestApp};
use crate::support::eventually;
use crate::support::sse::{parse_frames, push_utf8, read_all, Sse};

/// The `reagent_sse_subscribers` gauge.
fn subscribers(app: &TestApp) -> f64 {
    let text = app
        .app
        .state
        .metrics
        .render(app.app.state.runs.active_runs());
    text.lines()
        .find_map(|l| l.strip_prefix("reagent_sse_subscribers "))
        .map(|v| v.trim().parse().unwrap())
        .unwrap_or(0.0)
}

async fn run_status(app: &TestApp, run: &str) -> Value {
    app.get_json(&format!("/api/runs/{run}"), None).await
}

/// Waits for the run to finish, then checks what was persisted: a terminal status, events 1..n
/// contiguous in the database ending with `done`, identical to a fresh replay.
async fn assert_completed_and_persisted(app: &TestApp, run: &str) -> Vec<Sse> {
    // A replay of a finished run closes after `done`; of a live one, it follows until `done`.
    let replay = app.events(run, None).await;
    assert_eq!(
        replay.last().unwrap().event,
        "done",
        "run {run} did not end with done"
    );
    assert_eq!(replay.last().unwrap().data["status"], "completed");
    for (i, e) in replay.iter().enumerate() {
        assert_eq!(e.id, i as u64 + 1, "replay ids of {run}");
    }
    let id = Uuid::parse_str(run).unwrap();
    let replayed = replay.len();
    let stored = eventually(
        &format!("run {run} completed and persisted"),
        || async move {
            let stored = app.app.state.store.list_events(id, 0).await.unwrap();
            let status = run_status(app, run).await;
            (status["status"] == "completed" && stored.len() == replayed).then_some(stored)
        },
    )
    .await;
    assert_eq!(run_status(app, run).await["status"], "completed");
    assert_eq!(stored.len(), replay.len(), "events persisted for {run}");
    for (i, (s, r)) in stored.iter().zip(&replay).enumerate() {
        assert_eq!(s.seq, i as i64 + 1);
        assert_eq!(s.name, r.event);
        assert_eq!(serde_json::from_str::<Value>(&s.data).unwrap(), r.data);
    }
    replay
}

/// Script: two echo steps, then a streamed answer of many deltas.
fn script_run(app: &TestApp) {
    app.llm.tool_calls(&[("c1", "echo", r#"{"text":"one"}"#)]);
    app.llm.tool_calls(&[("c2", "echo", r#"{"text":"two"}"#)]);
    app.llm.text("enough");
    let deltas: Vec<String> = (0..400).map(|i| format!("part {i} ")).collect();
    app.llm.push_stream(Turn::Stream(deltas, None));
}
