//! OpenTelemetry traces (docs/deployment.md, "Tracing") of the real binary, exported to an
//! in-process OTLP/HTTP receiver ([`Collector`]): the spans of a run with a tool call, their
//! kinds, parent links and GenAI attributes, token counts equal to the run's `usage`; an
//! incoming `traceparent` adopted and one sent on to the provider and the HTTP tool; `trace_id`
//! in `start` and `done`; a failed model call; content only with capture on; a dead collector.

use std::sync::{Arc, Mutex};

use axum::http::HeaderMap;
use axum::routing::post;
use axum::{Json, Router};
use reagent::testing::fake_openai::{FakeOpenAi, FakeReply};
use serde_json::{json, Value};

use crate::support::child::Server;
use crate::support::otlp::{named, Collector, Span};
use crate::support::sse::{read_all, Sse};
use crate::support::target::Target;

mod course;
mod mcp;
mod tool_run;

/// The caller's trace in the tests' requests.
const CALLER_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN: &str = "00f067aa0ba902b7";

/// An HTTP tool `probe` that records the `traceparent` of each call.
struct Probe {
    target: Target,
    seen: Arc<Mutex<Vec<Option<String>>>>,
}

impl Probe {
    async fn serve() -> Probe {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let kept = seen.clone();
        let routes = Router::new().route(
            "/probe",
            post(move |headers: HeaderMap| {
                let kept = kept.clone();
                async move {
                    let tp = headers.get("traceparent").and_then(|v| v.to_str().ok());
                    kept.lock().unwrap().push(tp.map(str::to_string));
                    Json(json!({"ok": true}))
                }
            }),
        );
        Probe {
            target: Target::serve("127.0.0.1", routes).await,
            seen,
        }
    }

    fn config(&self) -> String {
        format!(
            "[[tools.http]]\nname = \"probe\"\ndescription = \"probes\"\nurl = \"{}\"\n",
            self.target.url("/probe")
        )
    }
}

/// The binary in `dir` with tracing to `collector` (exported every 100 ms) and `extra`.
async fn traced(
    dir: &std::path::Path,
    llm: &FakeOpenAi,
    otlp: &str,
    extra: &[(&str, &str)],
) -> Server {
    traced_on(dir, &llm.base_url(), otlp, extra).await
}

/// [`traced`] with the model at `base`.
async fn traced_on(
    dir: &std::path::Path,
    base: &str,
    otlp: &str,
    extra: &[(&str, &str)],
) -> Server {
    let mut env = vec![
        ("LLM_BASE_URL", base),
        ("LLM_MAX_RETRIES", "0"),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", otlp),
        ("OTEL_BSP_SCHEDULE_DELAY", "100"),
        ("REAGENT_HTTP_ALLOW_PRIVATE", "true"),
    ];
    env.extend_from_slice(extra);
    Server::serve(dir, &env).await
}

/// `POST /api/chat` with the caller's `traceparent`; the run's events.
async fn chat(server: &Server, query: &str) -> Vec<Sse> {
    let r = reqwest::Client::new()
        .post(server.url("/api/chat"))
        .header("traceparent", format!("00-{CALLER_TRACE}-{CALLER_SPAN}-01"))
        .json(&json!({"query": query}))
        .send()
        .await
        .unwrap();
    read_all(r).await
}

fn event<'a>(events: &'a [Sse], name: &str) -> &'a Value {
    &events.iter().find(|e| e.event == name).unwrap().data
}

fn sum(spans: &[&Span], key: &str) -> i64 {
    spans.iter().map(|s| s.int(key).unwrap_or(0)).sum()
}

#[tokio::test]
async fn a_tool_run_is_one_trace_of_agent_chat_and_tool_spans_in_the_callers_trace() {
    let dir = tempfile::tempdir().unwrap();
    let probe = Probe::serve().await;
    std::fs::write(dir.path().join("config.toml"), probe.config()).unwrap();
    let collector = Collector::start().await;
    let llm = FakeOpenAi::start().await.unwrap();
    let cached = json!({"prompt_tokens": 30, "completion_tokens": 7, "total_tokens": 37,
        "prompt_tokens_details": {"cached_tokens": 20, "cache_write_tokens": 4}});
    llm.push(FakeReply::tool_calls(vec![("call_1", "probe", "{}")]).raw_usage(cached));
    llm.push(FakeReply::text("probed").usage(50, 3));
    llm.set_default(FakeReply::text("It is probed.").usage(80, 5));
    let url = "http://phoenix:6006/trace/{trace_id}";
    let server = traced(
        dir.path(),
        &llm,
        &collector.endpoint(),
        &[("REAGENT_TRACE_URL", url)],
    )
    .await;

    let events = chat(&server, "probe it").await;
    let (start, done) = (event(&events, "start"), event(&events, "done"));
    tool_run::the_run_reports_the_callers_trace(start, done);
    let calls = done["usage"]["llm_calls"].as_u64().unwrap() as usize;
    let spans = collector
        .wait_for("the run's spans", |s| {
            s.iter().any(|s| s.name.starts_with("invoke_agent"))
                && s.iter().filter(|s| s.name.starts_with("chat ")).count() == calls
        })
        .await;
    let agent = named(&spans, "invoke_agent reagent");
    tool_run::the_agent_span_is_the_callers_child(agent, start, done);
    let chats: Vec<&Span> = spans
        .iter()
        .filter(|s| s.name.starts_with("chat "))
        .collect();
    tool_run::the_chat_spans_are_the_loops_calls(&chats, agent, done, &llm);
    let tool = named(&spans, "execute_tool probe");
    tool_run::the_tool_span_is_the_agents_child(tool, agent);
    tool_run::requests_out_carry_their_spans(&probe, tool, &llm, &chats);
    // The run's log line names the trace.
    crate::support::eventually("the run's log line", || async {
        server
            .log()
            .lines()
            .any(|l| l.contains("run finished") && l.contains(CALLER_TRACE))
    })
    .await;
}

#[tokio::test]
async fn a_failed_model_call_fails_its_chat_span_and_the_run_span() {
    let dir = tempfile::tempdir().unwrap();
    let collector = Collector::start().await;
    let llm = FakeOpenAi::start().await.unwrap();
    llm.set_default(FakeReply::status(503));
    let server = traced(dir.path(), &llm, &collector.endpoint(), &[]).await;
    let events = chat(&server, "fail").await;
    assert_eq!(event(&events, "done")["status"], "failed");
    let spans = collector
        .wait_for("the failed run's spans", |s| {
            s.iter().any(|s| s.name.starts_with("invoke_agent"))
        })
        .await;
    let agent = named(&spans, "invoke_agent reagent");
    assert_eq!(agent.status, 2, "error");
    assert_eq!(agent.str("error.type"), Some("failed"));
    let chat = spans
        .iter()
        .find(|s| s.name.starts_with("chat "))
        .expect("a chat span");
    assert_eq!(chat.status, 2);
    assert_eq!(chat.str("error.type"), Some("503"));
    assert_eq!(chat.parent_span_id, agent.span_id);
}

#[tokio::test]
async fn content_goes_on_spans_only_with_capture_on() {
    let dir = tempfile::tempdir().unwrap();
    let collector = Collector::start().await;
    let llm = FakeOpenAi::start().await.unwrap();
    llm.set_default(FakeReply::text("a secret answer"));
    let server = traced(
        dir.path(),
        &llm,
        &collector.endpoint(),
        &[("REAGENT_OTEL_CAPTURE_CONTENT", "true")],
    )
    .await;
    chat(&server, "my private question").await;
    let spans = collector
        .wait_for("the spans", |s| {
            s.iter().any(|s| s.name.starts_with("invoke_agent"))
        })
        .await;
    let chat = spans.iter().find(|s| s.name.starts_with("chat ")).unwrap();
    let input = chat
        .str("gen_ai.input.messages")
        .expect("input messages captured");
    assert!(input.contains("my private question"), "{input}");
    let messages: Value = serde_json::from_str(input).unwrap();
    assert!(messages[0]["parts"].is_array(), "{messages}");
    let output = chat.str("gen_ai.output.messages").expect("output captured");
    assert!(output.contains("a secret answer"), "{output}");
}

#[tokio::test]
async fn a_dead_collector_costs_the_runs_nothing_but_one_warning() {
    let dir = tempfile::tempdir().unwrap();
    // A port nothing listens on any more.
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    let llm = FakeOpenAi::start().await.unwrap();
    llm.set_default(FakeReply::text("fine"));
    let server = traced(dir.path(), &llm, &dead, &[]).await;
    for i in 0..3 {
        let events = chat(&server, &format!("run {i}")).await;
        let done = event(&events, "done");
        assert_eq!(done["status"], "completed", "{done}");
        assert_eq!(done["trace_id"], CALLER_TRACE);
        // Past the 100 ms schedule, so each run's spans are a failed export of their own.
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    }
    let warning = "could not export traces";
    crate::support::eventually("the export warning", || async {
        server.log().contains(warning)
    })
    .await;
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let log = server.log();
    assert_eq!(
        log.matches(warning).count(),
        1,
        "one warning a minute:\n{log}"
    );
}

#[tokio::test]
async fn without_an_endpoint_there_is_no_trace_and_no_traceparent_out() {
    let dir = tempfile::tempdir().unwrap();
    let llm = FakeOpenAi::start().await.unwrap();
    llm.set_default(FakeReply::text("plain"));
    let server = Server::serve(dir.path(), &[("LLM_BASE_URL", llm.base_url().as_str())]).await;
    let events = chat(&server, "untraced").await;
    assert!(event(&events, "start").get("trace_id").is_none());
    assert!(event(&events, "done").get("trace_id").is_none());
    assert!(llm.traceparents().iter().all(Option::is_none));
}

#[tokio::test]
async fn json_logs_are_one_object_a_line_with_the_runs_and_the_requests_fields() {
    let dir = tempfile::tempdir().unwrap();
    let llm = FakeOpenAi::start().await.unwrap();
    llm.set_default(FakeReply::text("json"));
    let env = [
        ("LLM_BASE_URL", llm.base_url()),
        ("REAGENT_LOG_FORMAT", "json".to_string()),
    ];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let server = Server::serve(dir.path(), &env).await;
    let events = chat(&server, "log as json").await;
    let run_id = event(&events, "start")["run_id"]
        .as_str()
        .unwrap()
        .to_string();
    let line = |message: &'static str| {
        let log = server.log();
        log.lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|v| v["fields"]["message"] == message)
    };
    let finished =
        crate::support::eventually("the run's line", || async { line("run finished") }).await;
    let f = &finished["fields"];
    assert_eq!(f["run_id"], run_id.as_str());
    assert_eq!(f["status"], "completed");
    assert_eq!(f["agent"], "reagent");
    for key in [
        "conversation_id",
        "model",
        "iterations",
        "tool_calls",
        "total_tokens",
        "duration_ms",
    ] {
        assert!(!f[key].is_null(), "{key} in {finished}");
    }
    let request = crate::support::eventually("a request line", || async { line("request") }).await;
    assert_eq!(request["fields"]["route"], "/api/chat");
    assert_eq!(request["fields"]["method"], "POST");
    assert_eq!(request["fields"]["status"], 200);
    let log = server.log();
    assert!(
        log.lines()
            .all(|l| l.trim().is_empty() || l.starts_with('{')),
        "{log}"
    );
}
