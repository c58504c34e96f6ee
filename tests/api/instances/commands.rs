//! Every request about a run works on every instance (docs/deployment.md): three real instances on one
//! fresh PostgreSQL database, the run started on A (its owner) while a slow mock LLM keeps it
//! in flight, and its stream, interrupts, recalls, approvals, cancel and the conversation's
//! delete sent through B or C — which reach A only through command and approval rows and
//! `LISTEN/NOTIFY` (plus the owner's safety tick), and read A's events from the database.
//!
//! By topic: [`approvals`], [`delivery`], [`interrupts`], [`stops`].

mod approvals;
mod delivery;
mod interrupts;
mod stops;

use std::time::Duration;

use axum::routing;
use axum::{Json, Router};
use reagent_mock::{MockConfig, MockProvider};
use serde_json::{json, Value};

use crate::support::backends::{run_on, Backend};
use crate::support::child::Server;
use crate::support::cluster::Cluster;
use crate::support::eventually;
use crate::support::sse::{read_all, read_until, Sse};
use crate::support::target::Target;

/// A run of `tools` calculator iterations, each LLM call `latency` long: slow enough that
/// commands arrive mid-flight.
async fn slow_mock(tools: usize, latency_ms: u64) -> MockProvider {
    MockProvider::start(MockConfig {
        latency: Duration::from_millis(latency_ms),
        tokens_per_s: 100.0,
        answer_tokens: 20,
        tool_iterations: tools,
        ..MockConfig::default()
    })
    .await
    .unwrap()
}

async fn post(server: &Server, path: &str, body: Value) -> reqwest::Response {
    reqwest::Client::new()
        .post(server.url(path))
        .json(&body)
        .send()
        .await
        .unwrap()
}

async fn get(server: &Server, path: &str) -> reqwest::Response {
    reqwest::get(server.url(path)).await.unwrap()
}

async fn delete(server: &Server, path: &str) -> reqwest::Response {
    reqwest::Client::new()
        .delete(server.url(path))
        .send()
        .await
        .unwrap()
}

async fn events(server: &Server, run: &str) -> reqwest::Response {
    let r = get(server, &format!("/api/runs/{run}/events")).await;
    assert_eq!(r.status(), 200);
    r
}

/// Reads `server`'s stream of `run` until an event matches `stop`.
async fn until(server: &Server, run: &str, stop: impl FnMut(&Sse) -> bool) -> Vec<Sse> {
    read_until(events(server, run).await, stop).await.0
}

/// Three instances with a slow mock, and a run started on A (its owner) whose first tool result
/// B has streamed: the moment the tests send their commands through B or C. Returns the mock,
/// the cluster, the conversation id and the run id.
async fn in_flight(
    db: &str,
    tools: usize,
    latency_ms: u64,
) -> (MockProvider, Cluster, String, String) {
    let mock = slow_mock(tools, latency_ms).await;
    let cluster = Cluster::start(3, db, &mock.base_url(), &[]).await;
    let (conv, run) = cluster.at(0).start_run("go").await;
    until(cluster.at(1), &run, |e| e.label() == "step:tool_end").await;
    (mock, cluster, conv, run)
}

/// Sends an interrupt through `server` to `path`: its id, once accepted (202).
async fn interrupt(server: &Server, path: &str, content: &str) -> String {
    let r = post(server, path, json!({"content": content})).await;
    assert_eq!(r.status(), 202);
    let body: Value = r.json().await.unwrap();
    body["id"].as_str().unwrap().to_string()
}

async fn status(server: &Server, run: &str) -> String {
    let row: Value = get(server, &format!("/api/runs/{run}"))
        .await
        .json()
        .await
        .unwrap();
    row["status"].as_str().unwrap_or_default().to_string()
}

fn ids_rise(events: &[Sse]) {
    for w in events.windows(2) {
        assert!(
            w[0].id < w[1].id,
            "ids strictly increase: {} then {}",
            w[0].id,
            w[1].id
        );
    }
}

/// The `step:interrupt` events' ids.
fn drained(events: &[Sse]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e.label() == "step:interrupt")
        .flat_map(|e| e.data["ids"].as_array().cloned().unwrap_or_default())
        .filter_map(|v| v.as_str().map(String::from))
        .collect()
}

async fn error_code(r: reqwest::Response, status: u16) -> String {
    assert_eq!(r.status().as_u16(), status);
    let body: Value = r.json().await.unwrap();
    body["error"]["code"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}
