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

/// The app with the configured model pointing at `base_url` (a fake, or a closed port).
async fn llm_app(base_url: &str, extra_env: Vec<(&'static str, String)>) -> TestApp {
    let mut env = vec![
        ("LLM_BASE_URL", base_url.to_string()),
        ("LLM_API_KEY", "sk-test".to_string()),
        ("LLM_MODEL", "fake-model".to_string()),
        ("LLM_TIMEOUT_S", "1".to_string()),
        ("LLM_MAX_RETRIES", RETRIES.to_string()),
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
    let stored: Value = app
        .get(&format!("/api/runs/{run}"), None)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(stored["status"], d["status"], "GET run disagrees: {stored}");
    assert_eq!(stored["error"], d["error"]);
    assert_eq!(stored["iterations"], d["iterations"]);
    assert!(!stored["finished_at"].is_null());
    assert_nothing_left(app).await;
    d
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

// ---------------------------------------------------------------------------------------------
// LLM faults (real client, fake provider)

#[tokio::test]
async fn burst_of_429_with_retry_after_is_retried_and_the_run_completes() {
    let fake = FakeOpenAi::start().await.unwrap();
    fake.push(FakeReply::status(429).retry_after(1));
    fake.push(FakeReply::status(429).retry_after_raw("0.2"));
    fake.push(FakeReply::text("brief"));
    fake.push(FakeReply::text("The synthesised answer."));
    let app = llm_app(&fake.base_url(), vec![]).await;
    let (run, events) = run(&app, "hello").await;
    let d = check_end(&app, &run, &events, "completed").await;
    assert_eq!(d["answer"], "The synthesised answer.");
    assert_eq!(answer_done(&events)["fallback"], false);
    assert_eq!(calls(&fake), (3, 1), "2 retries + 1 loop call, 1 synthesis");
    assert_eq!(d["usage"]["llm_calls"], 2, "retries are not separate calls");
}

#[tokio::test]
async fn endless_429_without_retry_after_gives_up_after_bounded_retries() {
    let fake = FakeOpenAi::start().await.unwrap();
    fake.set_default(FakeReply::status(429));
    let app = llm_app(&fake.base_url(), vec![]).await;
    let (run, events) = run(&app, "hello").await;
    let d = check_end(&app, &run, &events, "failed").await;
    assert!(d["error"].as_str().unwrap().contains("429"), "{d}");
    assert_eq!(
        calls(&fake),
        (1 + RETRIES, 0),
        "bounded: no synthesis for a dead model"
    );
}

#[tokio::test]
async fn server_errors_500_and_503_are_retried() {
    let fake = FakeOpenAi::start().await.unwrap();
    fake.push(FakeReply::status(500));
    fake.push(FakeReply::status(503).body("<html>upstream down</html>"));
    fake.push(FakeReply::tool_calls(vec![(
        "c1",
        "echo",
        r#"{"text":"x"}"#,
    )]));
    fake.push(FakeReply::status(502));
    fake.push(FakeReply::text("done"));
    fake.push(FakeReply::status(503));
    fake.push(FakeReply::text("Final answer."));
    let app = llm_app(&fake.base_url(), vec![]).await;
    let (run, events) = run(&app, "hello").await;
    let d = check_end(&app, &run, &events, "completed").await;
    assert_eq!(d["answer"], "Final answer.");
    assert_eq!(d["tool_calls"], 1);
    assert_eq!(calls(&fake), (5, 2));
    assert_eq!(fake.remaining(), 0);
}

#[tokio::test]
async fn a_non_retryable_status_fails_at_once() {
    let fake = FakeOpenAi::start().await.unwrap();
    fake.set_default(FakeReply::status(401).body(r#"{"error":{"message":"bad key"}}"#));
    let app = llm_app(&fake.base_url(), vec![]).await;
    let (run, events) = run(&app, "hello").await;
    let d = check_end(&app, &run, &events, "failed").await;
    assert!(d["error"].as_str().unwrap().contains("401"), "{d}");
    assert_eq!(fake.request_count(), 1);
    // The answer says in one plain sentence what failed and what to set; the provider's JSON
    // stays in `done.error`.
    let answer = d["answer"].as_str().unwrap();
    assert!(answer.contains("refused the API key"), "{answer}");
    assert!(answer.contains("LLM_API_KEY"), "{answer}");
    assert!(
        !answer.contains("bad key") && !answer.contains('{'),
        "{answer}"
    );
    assert!(d["error"].as_str().unwrap().contains("bad key"), "{d}");
}

#[tokio::test]
async fn connection_refused_fails_the_run_with_a_clear_error() {
    // A port that was just free: nothing listens there.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let app = llm_app(&format!("http://127.0.0.1:{port}/v1"), vec![]).await;
    let (run, events) = run(&app, "hello").await;
    let d = check_end(&app, &run, &events, "failed").await;
    assert!(
        d["error"].as_str().unwrap().contains("could not reach"),
        "{d}"
    );
    let answer = d["answer"].as_str().unwrap();
    assert!(answer.contains("LLM_BASE_URL"), "{answer}");
    assert!(
        !answer.contains("127.0.0.1"),
        "details stay in done.error: {answer}"
    );
}

#[tokio::test]
async fn a_loop_call_that_times_out_is_retried() {
    let fake = FakeOpenAi::start().await.unwrap();
    fake.push(FakeReply::text("too late").delay(5_000));
    fake.push(FakeReply::text("brief"));
    fake.push(FakeReply::text("Answer after a timeout."));
    let app = llm_app(&fake.base_url(), vec![]).await;
    let (run, events) = run(&app, "hello").await;
    let d = check_end(&app, &run, &events, "completed").await;
    assert_eq!(d["answer"], "Answer after a timeout.");
    assert_eq!(calls(&fake), (2, 1));
}

#[tokio::test]
async fn a_model_that_never_answers_fails_the_run_after_bounded_timeouts() {
    let fake = FakeOpenAi::start().await.unwrap();
    fake.set_default(FakeReply::text("never").endless(50));
    let app = llm_app(&fake.base_url(), vec![]).await;
    let (run, events) = run(&app, "hello").await;
    let d = check_end(&app, &run, &events, "failed").await;
    assert!(d["error"].as_str().unwrap().contains("timed out"), "{d}");
    assert_eq!(calls(&fake), (1 + RETRIES, 0));
}

#[tokio::test]
async fn a_stream_cut_mid_answer_resets_to_the_brief_answer() {
    let fake = FakeOpenAi::start().await.unwrap();
    fake.push(FakeReply::text("The brief answer."));
    // Role chunk + 3 content deltas, then the connection ends without `[DONE]`.
    fake.push(FakeReply::text("A long synthesised answer that never finishes").cut_after(4));
    let app = llm_app(&fake.base_url(), vec![]).await;
    let (run, events) = run(&app, "hello").await;
    let d = check_end(&app, &run, &events, "completed").await;
    let l = labels(&events);
    assert!(l.contains(&"answer:reset".to_string()), "{l:?}");
    assert_eq!(d["answer"], "The brief answer.");
    assert_eq!(answer_done(&events)["fallback"], true);
    assert_eq!(
        calls(&fake),
        (1, 1),
        "no retry once deltas reached the user (no duplicates)"
    );
}

#[tokio::test]
async fn a_stream_cut_before_any_delta_is_retried() {
    let fake = FakeOpenAi::start().await.unwrap();
    fake.push(FakeReply::text("brief"));
    fake.push(FakeReply::text("lost").cut_after(1));
    fake.push(FakeReply::text("Second try."));
    let app = llm_app(&fake.base_url(), vec![]).await;
    let (run, events) = run(&app, "hello").await;
    let d = check_end(&app, &run, &events, "completed").await;
    assert_eq!(d["answer"], "Second try.");
    assert!(!labels(&events).contains(&"answer:reset".to_string()));
    assert_eq!(calls(&fake), (1, 2));
}

#[tokio::test]
async fn a_malformed_chunk_falls_back_to_the_brief_answer() {
    let fake = FakeOpenAi::start().await.unwrap();
    fake.push(FakeReply::text("The brief answer."));
    fake.push(FakeReply::text("Streaming then garbage").malformed_after(3));
    let app = llm_app(&fake.base_url(), vec![]).await;
    let (run, events) = run(&app, "hello").await;
    let d = check_end(&app, &run, &events, "completed").await;
    assert_eq!(d["answer"], "The brief answer.");
    assert_eq!(answer_done(&events)["fallback"], true);
    assert_eq!(calls(&fake), (1, 1));
}

#[tokio::test]
async fn a_malformed_loop_reply_fails_the_run_without_retrying() {
    let fake = FakeOpenAi::start().await.unwrap();
    // A non-streamed reply cut inside its JSON.
    fake.set_default(FakeReply::text("x").malformed_after(0));
    let app = llm_app(&fake.base_url(), vec![]).await;
    let (run, events) = run(&app, "hello").await;
    let d = check_end(&app, &run, &events, "failed").await;
    assert!(
        d["error"].as_str().unwrap().contains("invalid response"),
        "{d}"
    );
    assert_eq!(fake.request_count(), 1);
}

#[tokio::test]
async fn an_endless_trickle_in_synthesis_is_cut_by_the_stream_budget() {
    let fake = FakeOpenAi::start().await.unwrap();
    fake.push(FakeReply::text("The brief answer."));
    // A chunk every 50 ms, forever: each gap is under the 1 s timeout, so only the total
    // stream budget (STREAM_TOTAL_FACTOR × timeout) can end it.
    fake.push(FakeReply::text("trickle ").endless(50));
    let app = llm_app(&fake.base_url(), vec![]).await;
    let (run, events) = run(&app, "hello").await;
    let d = check_end(&app, &run, &events, "completed").await;
    assert_eq!(d["answer"], "The brief answer.");
    assert_eq!(answer_done(&events)["fallback"], true);
    assert!(labels(&events).contains(&"answer:reset".to_string()));
    assert_eq!(calls(&fake), (1, 1));
}

#[tokio::test]
async fn an_enormous_streamed_answer_is_delivered_whole() {
    let fake = FakeOpenAi::start().await.unwrap();
    let big: String = "lorem ipsum ".repeat(200_000); // 2.4 MB
    fake.push(FakeReply::text("brief"));
    fake.push(FakeReply::text(big.clone()).chunk_chars(64 * 1024));
    let app = llm_app(&fake.base_url(), vec![]).await;
    let (run, events) = run(&app, "hello").await;
    let d = check_end(&app, &run, &events, "completed").await;
    assert_eq!(d["answer"].as_str().unwrap(), big);
    assert_eq!(answer_done(&events)["fallback"], false);
    assert_eq!(calls(&fake), (1, 1));
}

#[tokio::test]
async fn an_enormous_loop_reply_still_reaches_the_user_when_synthesis_is_refused() {
    let fake = FakeOpenAi::start().await.unwrap();
    let big: String = "lorem ipsum ".repeat(200_000); // 2.4 MB
    fake.push(FakeReply::text(big.clone()));
    let app = llm_app(&fake.base_url(), vec![]).await;
    let (run, events) = run(&app, "hello").await;
    let d = check_end(&app, &run, &events, "completed").await;
    // The synthesis prompt carries the 2.4 MB draft; the fake (like real providers) refuses a
    // body that large with 413, which is not retried, so the draft itself is the answer.
    assert_eq!(d["answer"].as_str().unwrap(), big);
    assert_eq!(answer_done(&events)["fallback"], true);
    // The fake refuses the body before recording it, so only the loop call is counted.
    assert_eq!(calls(&fake), (1, 0));
}

/// `LLM_MAX_RESPONSE_BYTES` for the capped tests: 1 MB.
const CAP: &str = "1000000";

#[tokio::test]
async fn a_loop_reply_over_the_size_cap_fails_the_run_without_retrying() {
    let fake = FakeOpenAi::start().await.unwrap();
    fake.set_default(FakeReply::text("lorem ipsum ".repeat(200_000)));
    let app = llm_app(
        &fake.base_url(),
        vec![("LLM_MAX_RESPONSE_BYTES", CAP.into())],
    )
    .await;
    let (run, events) = run(&app, "hello").await;
    let d = check_end(&app, &run, &events, "failed").await;
    assert!(
        d["error"]
            .as_str()
            .unwrap()
            .contains("LLM_MAX_RESPONSE_BYTES"),
        "{d}"
    );
    assert_eq!(
        calls(&fake),
        (1, 0),
        "the same answer would come again: no retry"
    );
}

#[tokio::test]
async fn a_streamed_answer_over_the_size_cap_is_cut_and_falls_back() {
    let fake = FakeOpenAi::start().await.unwrap();
    fake.push(FakeReply::text("The brief answer."));
    fake.push(FakeReply::text("lorem ipsum ".repeat(200_000)).chunk_chars(16 * 1024));
    let app = llm_app(
        &fake.base_url(),
        vec![("LLM_MAX_RESPONSE_BYTES", CAP.into())],
    )
    .await;
    let (run, events) = run(&app, "hello").await;
    let d = check_end(&app, &run, &events, "completed").await;
    assert_eq!(d["answer"], "The brief answer.");
    assert_eq!(answer_done(&events)["fallback"], true);
    assert!(labels(&events).contains(&"answer:reset".to_string()));
    let streamed: usize = events
        .iter()
        .filter(|e| e.label() == "answer:delta")
        .map(|e| e.data["content"].as_str().unwrap().len())
        .sum::<usize>()
        - "The brief answer.".len();
    assert!(
        streamed <= 1_000_000,
        "{streamed} bytes streamed past the cap"
    );
    assert_eq!(calls(&fake), (1, 1));
}

/// A provider that answers the loop call normally, then streams one SSE "event" that never
/// ends (no line break, ever): the size cap, not the time budget, must stop it.
#[tokio::test]
async fn an_endless_event_without_line_breaks_is_cut_by_the_size_cap() {
    use axum::response::IntoResponse;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let provider = Router::new().route(
        "/v1/chat/completions",
        post(|body: axum::Json<Value>| async move {
            if body["stream"] == true {
                let chunk = axum::body::Bytes::from(vec![b'a'; 64 * 1024]);
                let endless =
                    futures::stream::repeat_with(move || Ok::<_, std::io::Error>(chunk.clone()));
                (
                    [("content-type", "text/event-stream")],
                    axum::body::Body::from_stream(endless),
                )
                    .into_response()
            } else {
                axum::Json(json!({
                    "choices": [{"message": {"role": "assistant", "content": "The brief answer."},
                                 "finish_reason": "stop"}],
                }))
                .into_response()
            }
        }),
    );
    let server = tokio::spawn(async move { axum::serve(listener, provider).await });
    let app = llm_app(
        &format!("http://{addr}/v1"),
        vec![
            ("LLM_MAX_RESPONSE_BYTES", CAP.into()),
            ("LLM_TIMEOUT_S", "30".into()),
        ],
    )
    .await;
    let (run, events) = run(&app, "hello").await;
    let d = check_end(&app, &run, &events, "completed").await;
    assert_eq!(d["answer"], "The brief answer.");
    assert_eq!(answer_done(&events)["fallback"], true);
    server.abort();
}

#[tokio::test]
async fn tool_call_arguments_that_are_not_json_become_an_error_observation() {
    let fake = FakeOpenAi::start().await.unwrap();
    fake.push(FakeReply::tool_calls(vec![("c1", "echo", "{not json")]));
    fake.push(FakeReply::text("I could not call the tool."));
    let app = llm_app(&fake.base_url(), vec![]).await;
    let (run, events) = run(&app, "hello").await;
    check_end(&app, &run, &events, "completed").await;
    let end = events
        .iter()
        .find(|e| e.label() == "step:tool_end")
        .expect("tool_end");
    assert_eq!(end.data["error"], true);
    assert!(
        end.data["observation"]
            .as_str()
            .unwrap()
            .contains("not valid JSON"),
        "{}",
        end.data
    );
    // The model saw the error next to its call id, and the assistant message kept the raw text.
    let second = &fake.requests()[1];
    let msgs = second["messages"].as_array().unwrap();
    let tool_msg = msgs.iter().find(|m| m["role"] == "tool").unwrap();
    assert_eq!(tool_msg["tool_call_id"], "c1");
    assert!(tool_msg["content"]
        .as_str()
        .unwrap()
        .contains("not valid JSON"));
    assert_eq!(calls(&fake), (2, 1));
    assert_eq!(
        fake.requests()[2]["stream"],
        true,
        "synthesis still ran: {}",
        FAKE_DEFAULT_TEXT
    );
}

#[tokio::test]
async fn tool_calls_sharing_one_id_get_distinct_ids_before_going_back_to_the_provider() {
    let fake = FakeOpenAi::start().await.unwrap();
    fake.push(FakeReply::tool_calls(vec![
        ("dup", "echo", r#"{"text":"1"}"#),
        ("dup", "echo", r#"{"text":"2"}"#),
    ]));
    fake.push(FakeReply::text("both done"));
    let app = llm_app(&fake.base_url(), vec![]).await;
    let (run, events) = run(&app, "hello").await;
    let d = check_end(&app, &run, &events, "completed").await;
    assert_eq!(d["tool_calls"], 2);
    let msgs = fake.requests()[1]["messages"].as_array().unwrap().clone();
    let assistant = msgs.iter().find(|m| m["tool_calls"].is_array()).unwrap();
    let call_ids: Vec<&str> = assistant["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    let result_ids: Vec<&str> = msgs
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["tool_call_id"].as_str().unwrap())
        .collect();
    assert_eq!(call_ids, ["dup", "dup_2"]);
    assert_eq!(result_ids, call_ids, "each result answers exactly one call");
}

// ---------------------------------------------------------------------------------------------
// Tool faults (scripted model)

/// Always panics.
fn panics() -> Arc<FakeTool> {
    FakeTool::panicking("panics")
        .describe("Always panics")
        .params(json!({"type": "object", "properties": {}}))
        .arc()
}

const HUGE_LEN: usize = 1024 * 1024;

/// Returns 1 MB of text.
fn huge() -> Arc<FakeTool> {
    FakeTool::text("huge", &"x".repeat(HUGE_LEN))
        .describe("Returns a megabyte")
        .params(json!({"type": "object", "properties": {}}))
        .arc()
}

fn tool_ends(events: &[Sse]) -> Vec<&Value> {
    events
        .iter()
        .filter(|e| e.label() == "step:tool_end")
        .map(|e| &e.data)
        .collect()
}

/// The observation the model was sent for `call_id` (native `tool` message).
fn tool_message(llm: &ScriptedLlm, call_id: &str) -> String {
    llm.chat_requests()
        .iter()
        .flat_map(|r| r.messages.iter())
        .find(|m| m.tool_call_id.as_deref() == Some(call_id))
        .map(|m| m.content.clone())
        .unwrap_or_else(|| panic!("no tool message for {call_id}"))
}

#[tokio::test]
async fn a_panicking_tool_becomes_an_error_observation_and_the_run_goes_on() {
    let llm = ScriptedLlm::native();
    llm.tool_calls(&[("c1", "panics", "{}"), ("c2", "echo", r#"{"text":"ok"}"#)]);
    llm.text("recovered");
    let app = scripted_app(llm, vec![panics()], "").await;
    let (run, events) = run(&app, "go").await;
    let d = check_end(&app, &run, &events, "completed").await;
    assert_eq!(d["tool_calls"], 2);
    let ends = tool_ends(&events);
    let p = ends.iter().find(|e| e["call_id"] == "c1").unwrap();
    assert_eq!(p["error"], true);
    assert!(
        p["observation"].as_str().unwrap().contains("crashed"),
        "{p}"
    );
    let e = ends.iter().find(|e| e["call_id"] == "c2").unwrap();
    assert_eq!(e["error"], false, "the parallel call is unaffected");
    assert!(tool_message(&app.llm, "c1").contains("tool exploded"));
}

#[tokio::test]
async fn a_hanging_tool_times_out_as_an_error_observation() {
    let llm = ScriptedLlm::native();
    llm.tool_calls(&[("c1", "hangs", "{}")]);
    llm.text("gave up on it");
    // Never returns; counts how many of its calls were dropped (aborted), so the test can tell
    // a timed-out call was really stopped and not left running.
    let hangs = FakeTool::hanging("hangs")
        .describe("Never returns")
        .params(json!({"type": "object", "properties": {}}))
        .arc();
    let app = TestApp::with(Options {
        llm,
        extra_tools: vec![hangs.clone()],
        toml: "[react]\ntool_timeout_s = 1\n".into(),
        ..Options::default()
    })
    .await;
    let (run, events) = run(&app, "go").await;
    check_end(&app, &run, &events, "completed").await;
    let end = tool_ends(&events)[0];
    assert_eq!(end["error"], true);
    assert!(
        end["observation"].as_str().unwrap().contains("timed out"),
        "{end}"
    );
    assert_eq!(
        hangs.dropped(),
        1,
        "the timed-out call was aborted, not left running"
    );
}

#[tokio::test]
async fn cancelling_while_the_model_hangs_ends_the_run_at_once() {
    let fake = FakeOpenAi::start().await.unwrap();
    fake.set_default(FakeReply::text("never").endless(50));
    // A long timeout: only the cancel can end this call.
    let app = llm_app(&fake.base_url(), vec![("LLM_TIMEOUT_S", "60".into())]).await;
    let conv = app.create_conversation(None).await;
    let run = app.start_run(&conv, json!({"query": "hi"}), None).await;
    eventually("the model call started", || {
        std::future::ready(fake.request_count() > 0)
    })
    .await;
    assert_eq!(app.cancel(&run).await.status(), 202);
    let events = app.events(&run, None).await;
    check_end(&app, &run, &events, "cancelled").await;
    assert_eq!(answer_done(&events)["fallback"], true);
    assert_eq!(
        calls(&fake),
        (1, 0),
        "no retry and no synthesis after a cancel"
    );
}

#[tokio::test]
async fn a_huge_tool_output_is_truncated_as_configured() {
    let llm = ScriptedLlm::native();
    llm.tool_calls(&[("c1", "huge", "{}")]);
    llm.text("summarised");
    let hooks = "[[hooks]]\nkind = \"truncate_result\"\nmax_chars = 1000\n";
    let app = scripted_app(llm, vec![huge()], hooks).await;
    let (run, events) = run(&app, "go").await;
    check_end(&app, &run, &events, "completed").await;
    let seen = tool_message(&app.llm, "c1");
    assert!(seen.len() < 1100, "the model got {} chars", seen.len());
    assert!(seen.starts_with(&"x".repeat(1000)));
    assert!(seen.contains("truncated"), "{seen:.1100}");
    let end = tool_ends(&events)[0];
    assert!(end["observation"].as_str().unwrap().len() <= 4100);
    // The synthesis trace is cut too (REACT_SYNTHESIS_TRUNCATION).
    let synth = &app.llm.stream_requests()[0];
    let total: usize = synth.messages.iter().map(|m| m.content.len()).sum();
    assert!(total < 20_000, "synthesis prompt of {total} chars");
}

// ---------------------------------------------------------------------------------------------
// Hook faults

/// A webhook that answers `verdict` after `delay`.
async fn webhook(verdict: Value, delay: Duration) -> (String, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = Router::new().route(
        "/hook",
        post(move || {
            let verdict = verdict.clone();
            async move {
                tokio::time::sleep(delay).await;
                axum::Json(verdict)
            }
        }),
    );
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (format!("http://{addr}/hook"), task)
}

fn closed_url() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    format!("http://{}/hook", l.local_addr().unwrap())
}

async fn webhook_run(url: &str, policy: &str) -> (TestApp, Vec<Sse>, String) {
    let llm = ScriptedLlm::native();
    llm.tool_calls(&[("c1", "echo", r#"{"text":"hi"}"#)]);
    llm.text("after the hook");
    let hooks = format!(
        "[[hooks]]\nkind = \"webhook\"\nurl = \"{url}\"\ntimeout_ms = 300\npolicy = \"{policy}\"\n"
    );
    let app = scripted_app(llm, vec![], &hooks).await;
    let (run, events) = run(&app, "go").await;
    (app, events, run)
}

#[tokio::test]
async fn a_webhook_that_is_down_fails_open_or_closed_as_configured() {
    let url = closed_url();
    let (app, events, run) = webhook_run(&url, "fail_open").await;
    check_end(&app, &run, &events, "completed").await;
    let end = tool_ends(&events)[0];
    assert_eq!(
        (end["error"].clone(), end["blocked"].clone()),
        (json!(false), json!(false))
    );
    assert!(end["observation"].as_str().unwrap().starts_with("echo:"));

    let (app, events, run) = webhook_run(&url, "fail_closed").await;
    check_end(&app, &run, &events, "completed").await;
    let end = tool_ends(&events)[0];
    assert_eq!(end["blocked"], true, "{end}");
    assert!(!end["observation"].as_str().unwrap().starts_with("echo:"));
}

#[tokio::test]
async fn a_slow_webhook_times_out_and_its_policy_applies() {
    // It would allow, but too late (5 s against a 300 ms hook timeout).
    let (url, _server) = webhook(json!({"allow": true}), Duration::from_secs(5)).await;
    let (app, events, run) = webhook_run(&url, "fail_open").await;
    check_end(&app, &run, &events, "completed").await;
    let end = tool_ends(&events)[0];
    assert_eq!(end["blocked"], false, "{end}");
    assert!(end["observation"].as_str().unwrap().starts_with("echo:"));

    let (app, events, run) = webhook_run(&url, "fail_closed").await;
    check_end(&app, &run, &events, "completed").await;
    let end = tool_ends(&events)[0];
    assert_eq!(end["blocked"], true, "{end}");
}

#[tokio::test]
async fn a_webhook_verdict_is_applied_when_it_answers_in_time() {
    let (url, _server) = webhook(json!({"allow": false, "reason": "frozen"}), Duration::ZERO).await;
    let (app, events, run) = webhook_run(&url, "fail_open").await;
    check_end(&app, &run, &events, "completed").await;
    let end = tool_ends(&events)[0];
    assert_eq!(end["blocked"], true, "{end}");
    assert!(end["observation"].as_str().unwrap().contains("frozen"));
}

#[tokio::test]
async fn an_approval_never_answered_times_out_and_blocks_the_call() {
    let deploy = deploy();
    let llm = ScriptedLlm::native();
    llm.tool_calls(&[("c1", "deploy", r#"{"env":"prod"}"#)]);
    llm.text("not deployed");
    let app = scripted_app(
        llm,
        vec![deploy.clone()],
        "[[hooks]]\nkind = \"approval\"\napproval_timeout_s = 1\n",
    )
    .await;
    let (run, events) = run(&app, "ship").await;
    check_end(&app, &run, &events, "completed").await;
    assert!(labels(&events).contains(&"step:approval_required".to_string()));
    let end = tool_ends(&events)[0];
    assert_eq!(end["blocked"], true, "{end}");
    assert_eq!(deploy.call_count(), 0, "the tool never ran");
    let pending: Value = app.get("/api/approvals", None).await.json().await.unwrap();
    assert_eq!(
        pending.as_array().map(Vec::len).unwrap_or(0),
        0,
        "no approval left pending: {pending}"
    );
}
