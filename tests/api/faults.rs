//! Fault injection through the whole service (issue 7): the real router on `127.0.0.1:0`, a temp
//! SQLite file, and either the real OpenAI client talking to a [`FakeOpenAi`] that misbehaves
//! on cue (LLM faults) or a scripted model driving tools and hooks that misbehave (tool and hook
//! faults).
//!
//! Every scenario checks the same end-of-run contract:
//! - the stream ends with exactly one `done`, after an `answer done`, and `done` tells the truth
//!   (status, `error` when failed, fallback flagged on the answer);
//! - the user always gets a non-empty answer;
//! - `GET /api/runs/{id}` agrees with `done` (the terminal state is persisted);
//! - retries are bounded: the fake counts the requests it received;
//! - nothing is left behind: the manager's active-run count, and the `reagent_active_runs` and
//!   `reagent_sse_subscribers` gauges of `/metrics`, go back to 0.
//!
//! Timeouts in here are 1 s (the smallest `LLM_TIMEOUT_S`); no assertion is about timing.
//!
//! By topic: [`hooks`], [`llm`], [`llm_replies`], [`readiness`], [`storage`], [`streamed`],
//! [`tools`], [`usage`].

mod hooks;
mod llm;
mod llm_replies;
mod readiness;
#[cfg(unix)]
mod storage;
mod streamed;
mod tools;
mod usage;

use std::sync::Arc;
use std::time::Duration;

use axum::routing::post;
use axum::Router;
use reagent::testing::fake_openai::{FakeOpenAi, FakeReply, FAKE_DEFAULT_TEXT};
use reagent::testing::scripted::ScriptedLlm;
use reagent::tools::Tool;
use serde_json::{json, Value};

use crate::support::app::{Options, TestApp};
use crate::support::eventually;
use crate::support::sse::{labels, Sse};
use crate::support::tools::{deploy, FakeTool};

// ---------------------------------------------------------------------------------------------
// Harness

/// Retries allowed per LLM call in these tests (`LLM_MAX_RETRIES`): 3 attempts at most.
const RETRIES: usize = 2;

/// The app with the configured model pointing at `base_url` (a fake, or a closed port), with
/// `synthesis = "always"`: the loop's calls unstreamed, then the streamed synthesis, whose
/// faults these tests script (`streamed` tests the loop's streamed calls of `"auto"`).
async fn llm_app(base_url: &str, extra_env: Vec<(&'static str, String)>) -> TestApp {
    let mut env = vec![
        ("LLM_BASE_URL", base_url.to_string()),
        ("LLM_API_KEY", "sk-test".to_string()),
        ("LLM_MODEL", "fake-model".to_string()),
        ("LLM_TIMEOUT_S", "1".to_string()),
        ("LLM_MAX_RETRIES", RETRIES.to_string()),
        ("LLM_SYNTHESIS", "always".to_string()),
    ];
    env.extend(extra_env);
    TestApp::with(Options {
        env,
        config_models: true,
        ..Options::default()
    })
    .await
}

/// A scripted-model app with extra tools and configuration (tool and hook faults).
async fn scripted_app(llm: ScriptedLlm, tools: Vec<Arc<dyn Tool>>, toml: &str) -> TestApp {
    TestApp::with(Options {
        llm,
        extra_tools: tools,
        toml: toml.to_string(),
        env: vec![("REACT_COMPLETION_CHECK_MIN_TOOLS", "100".into())],
        server_toml: String::new(),
        ..Options::default()
    })
    .await
}

/// Starts a run and reads its whole stream.
async fn run(app: &TestApp, query: &str) -> (String, Vec<Sse>) {
    let conv = app.create_conversation(None).await;
    let run = app.start_run(&conv, json!({ "query": query }), None).await;
    let events = app.events(&run, None).await;
    (run, events)
}

/// The `done` event, checked to be the only one and the last, right after `answer done`.
fn done(events: &[Sse]) -> &Value {
    let l = labels(events);
    assert_eq!(l.iter().filter(|x| *x == "done").count(), 1, "{l:?}");
    assert_eq!(l.last().map(String::as_str), Some("done"), "{l:?}");
    assert_eq!(l[l.len() - 2], "answer:done", "{l:?}");
    assert_eq!(l.first().map(String::as_str), Some("start"), "{l:?}");
    let ids: Vec<u64> = events.iter().map(|e| e.id).collect();
    assert_eq!(ids, (1..=events.len() as u64).collect::<Vec<_>>());
    &events[events.len() - 1].data
}

/// The `answer done` event.
fn answer_done(events: &[Sse]) -> &Value {
    &events[events.len() - 2].data
}

/// The streamed answer deltas after the last `reset` (what a client shows).
fn shown_answer(events: &[Sse]) -> String {
    let mut text = String::new();
    for e in events.iter().filter(|e| e.event == "answer") {
        match e.data["status"].as_str() {
            Some("reset") => text.clear(),
            Some("delta") => text.push_str(e.data["content"].as_str().unwrap()),
            _ => {}
        }
    }
    text
}

/// The end-of-run contract (see the module docs); returns `done`.
async fn check_end(app: &TestApp, run: &str, events: &[Sse], status: &str) -> Value {
    let d = done(events).clone();
    assert_eq!(d["status"], status, "{d}");
    let answer = d["answer"].as_str().unwrap();
    assert!(!answer.trim().is_empty(), "the user got no answer: {d}");
    let ad = answer_done(events);
    assert_eq!(ad["content"], d["answer"]);
    assert_eq!(shown_answer(events), answer, "deltas and done disagree");
    if status == "failed" {
        assert!(
            d["error"].as_str().is_some_and(|e| !e.is_empty()),
            "a failed run says why: {d}"
        );
        assert_eq!(ad["fallback"], true);
    } else {
        assert!(d["error"].is_null(), "{d}");
    }
    let stored: Value = app.get_json(&format!("/api/runs/{run}"), None).await;
    assert_eq!(stored["status"], d["status"], "GET run disagrees: {stored}");
    assert_eq!(stored["error"], d["error"]);
    assert_eq!(stored["iterations"], d["iterations"]);
    assert!(!stored["finished_at"].is_null());
    assert_nothing_left(app).await;
    d
}

/// Runs `hello` on the default app of `fake` and checks its end with [`check_end`]; the `done`
/// data and the run's events.
async fn run_hello(fake: &FakeOpenAi, status: &str) -> (Value, Vec<Sse>) {
    let app = llm_app(&fake.base_url(), vec![]).await;
    let (run, events) = run(&app, "hello").await;
    let d = check_end(&app, &run, &events, status).await;
    (d, events)
}

/// A gauge's value in the Prometheus text (absent = 0).
fn gauge(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
        .unwrap_or(0.0)
}

/// Waits (bounded) until no run is active and no SSE subscriber is counted. Dropping a finished
/// SSE response is asynchronous, hence the polling; the bound is generous, not a timing claim.
async fn assert_nothing_left(app: &TestApp) {
    eventually("nothing left behind", || async move {
        let text = app.get("/metrics", None).await.text().await.unwrap();
        let active = app.app.state.runs.active_runs();
        let (g_active, g_subs) = (
            gauge(&text, "reagent_active_runs"),
            gauge(&text, "reagent_sse_subscribers"),
        );
        if active == 0 && g_active == 0.0 && g_subs == 0.0 {
            return Ok(());
        }
        Err(format!(
            "left behind: {active} active runs, gauges active={g_active} subscribers={g_subs}"
        ))
    })
    .await;
}

/// `(chat, stream)` request counts at the fake.
fn calls(fake: &FakeOpenAi) -> (usize, usize) {
    let reqs = fake.requests();
    let streamed = reqs.iter().filter(|r| r["stream"] == true).count();
    (reqs.len() - streamed, streamed)
}

fn tool_ends(events: &[Sse]) -> Vec<&Value> {
    events
        .iter()
        .filter(|e| e.label() == "step:tool_end")
        .map(|e| &e.data)
        .collect()
}
