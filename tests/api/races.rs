//! Races through the HTTP API (issue 7), each run many times on both storage backends
//! (`<topic>::sqlite::<name>`, `<topic>::postgres::<name>`; `REAGENT_SKIP_PG=1` skips the
//! latter). The model is a [`FakeOpenAi`] whose default reply is a final answer, so a run ends in
//! two calls (loop and synthesis) and the racing requests land anywhere in it; a `gate` tool
//! holds a run still when a race needs "during the run" to be a fact rather than a timing guess.
//!
//! Invariants checked on every round:
//! - interrupt vs loop end: every accepted interrupt (202) is seen by the agent (a
//!   `step interrupt` and the model's next request) or reported in `done.unprocessed_interrupts`
//!   — exactly one of the two — and it is persisted; a refused one (409) is not.
//! - cancel vs completion: exactly one `done`, persisted exactly once; `GET /api/runs/{id}`
//!   agrees with it; a cancel answered 409 means the run was already completed.
//! - two runs started at once on one conversation: exactly one 202, the other 409 `run_active`.
//! - recall vs drain: exactly one of `{recalled: true}` (and the agent never sees it, nothing is
//!   stored) or 409 (and the agent saw it).
//!
//! By topic: [`follow_ups`], [`interrupts`], [`lifecycle`].

mod follow_ups;
mod interrupts;
mod lifecycle;

use std::collections::HashSet;
use std::time::Duration;

use reagent::testing::fake_openai::{FakeOpenAi, FakeReply};
use serde_json::{json, Value};
use uuid::Uuid;

use crate::support::app::{Options, TestApp};
use crate::support::eventually;
use crate::support::sse::{read_all, Sse};

/// Rounds per race. Each round is a whole run through HTTP and the database.
const ROUNDS: usize = 25;

/// A final answer in both modes: JSON mode parses it, native mode takes the text as is.
const FINAL: &str = r#"{"type":"final_answer","reasoning":"","answer":"final answer"}"#;

async fn app(db: &str) -> (TestApp, FakeOpenAi) {
    app_with(db, None).await
}

/// [`app`] with the model's `synthesis` policy set.
async fn app_with(db: &str, synthesis: Option<&str>) -> (TestApp, FakeOpenAi) {
    let fake = FakeOpenAi::start().await.unwrap();
    // A short think, so "between two drains" is a real window.
    fake.set_default(FakeReply::text(FINAL).delay(2).chunk_chars(1000));
    let mut env = vec![
        ("LLM_BASE_URL", fake.base_url()),
        ("LLM_API_KEY", "sk-test".into()),
        ("LLM_TIMEOUT_S", "5".into()),
        ("LLM_MAX_RETRIES", "0".into()),
        ("REACT_MAX_ITERATIONS", "20".into()),
    ];
    if let Some(policy) = synthesis {
        env.push(("LLM_SYNTHESIS", policy.to_string()));
    }
    let app = TestApp::with(Options {
        db_url: Some(db.to_string()),
        config_models: true,
        env,
        ..Options::default()
    })
    .await;
    (app, fake)
}

/// A varying head start (0 to 4.5 ms), so the racing requests spread over the moment that
/// matters. It only spreads the interleavings: no assertion depends on it.
async fn jitter(round: usize, salt: usize) {
    let steps = (round * 7 + salt * 3) % 10;
    if steps > 0 {
        tokio::time::sleep(Duration::from_micros(500 * steps as u64)).await;
    }
}

fn done(events: &[Sse]) -> &Value {
    let dones: Vec<&Sse> = events.iter().filter(|e| e.event == "done").collect();
    assert_eq!(dones.len(), 1, "exactly one done");
    assert_eq!(events.last().unwrap().event, "done", "done is last");
    &dones[0].data
}

/// Waits until the run is fully persisted, then returns its events as stored.
async fn stored_events(app: &TestApp, run: &str) -> Vec<reagent::store::StoredEvent> {
    let id: Uuid = run.parse().unwrap();
    if let Some(live) = app.app.state.runs.live_run("", id) {
        tokio::time::timeout(Duration::from_secs(20), live.finished())
            .await
            .expect("run never finished persisting");
    }
    app.app.state.store.list_events(id, 0).await.unwrap()
}

/// Interrupt ids the agent saw (`step interrupt`) and those reported unprocessed.
fn interrupt_fates(events: &[Sse]) -> (Vec<String>, Vec<String>) {
    let seen = events
        .iter()
        .filter(|e| e.label() == "step:interrupt")
        .flat_map(|e| e.data["ids"].as_array().unwrap().clone())
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    let unprocessed = done(events)["unprocessed_interrupts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["id"].as_str().unwrap().to_string())
        .collect();
    (seen, unprocessed)
}

/// The conversation's stored messages of `kind`.
async fn messages(app: &TestApp, conv: &str, kind: &str) -> Vec<Value> {
    let body: Value = app
        .get_json(&format!("/api/conversations/{conv}"), None)
        .await;
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["kind"] == kind)
        .cloned()
        .collect()
}

/// Every user message the model was sent, in every request so far.
fn model_saw(fake: &FakeOpenAi, needle: &str) -> bool {
    fake.requests().iter().any(|r| {
        r["messages"].as_array().is_some_and(|ms| {
            ms.iter()
                .any(|m| m["content"].as_str().is_some_and(|c| c.contains(needle)))
        })
    })
}
